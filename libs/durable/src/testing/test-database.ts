import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { applyMigrations, readMigrations } from '../embedded-postgres/migrations.js';
import { InvalidOptionsError } from '../errors/index.js';
import { isMysqlUrl } from '../store/dialect.js';
import { createDatabaseFromTemplate, databaseUrl, dropAbandonedDatabases, dropDatabase } from './database-admin.js';
import { openMysqlTestDatabase } from './mysql-test-database.js';
import type { DurableTestDatabase, TestDatabaseOption, TestSchemaOptions } from './test-database-options.js';
export type { DurableTestDatabase, TestDatabaseOption, TestSchemaOptions } from './test-database-options.js';

const PREFIX = 'durable_testing_';
/** libs/durable/prisma/schema.sql: two folders up from src/testing (sources) and dist/testing (build) alike. */
const PACKAGED_SCHEMA = fileURLToPath(new URL('../../prisma/schema.sql', import.meta.url));

/** How a test template is built: `key` names what it holds (hashed into the template's name). */
interface TemplateRecipe {
  key: string;
  build(url: string): Promise<void>;
}

/** The schema's template: the app's migrations (applied as `prisma migrate deploy` would) or the package's schema.sql, then the extra SQL. */
export function templateRecipe(schema: TestSchemaOptions = {}): TemplateRecipe {
  const parts: string[] = [];
  let migrationsDir: string | undefined;
  if (schema.migrations) {
    migrationsDir = resolve(schema.migrations);
    if (!existsSync(migrationsDir))
      throw new InvalidOptionsError(`testing: schema.migrations "${migrationsDir}" does not exist (a Prisma migrations folder).`);
    const migrations = readMigrations(migrationsDir);
    if (!migrations.length) throw new InvalidOptionsError(`testing: schema.migrations "${migrationsDir}" holds no <name>/migration.sql.`);
    parts.push(...migrations.map((m) => `${m.name} ${m.checksum}`));
  }
  const sql = migrationsDir ? [] : [readFileSync(PACKAGED_SCHEMA, 'utf8')];
  for (const s of schema.sql ?? []) {
    if (typeof s !== 'string') throw new InvalidOptionsError('testing: schema.sql must be an array of SQL texts.');
    sql.push(s);
  }
  parts.push(...sql);
  return {
    key: `clock v2\n${parts.join('\n;\n')}`,
    build: async (url) => {
      if (migrationsDir) await applyMigrations(url, migrationsDir);
      if (!sql.length) return;
      const db = new pg.Client({ connectionString: url, application_name: 'nestjs-durable testing' });
      db.on('error', () => {}); // a server stopped under the client: the statement in flight reports it
      await db.connect();
      try {
        for (const text of sql) await db.query(text); // no parameters: the simple protocol, so a text of many statements is fine
      } finally {
        await db.end();
      }
    },
  };
}

function resolveOption(database: TestDatabaseOption | undefined): TestDatabaseOption {
  if (database === undefined) return process.env.DURABLE_TEST_DATABASE_URL ? { url: process.env.DURABLE_TEST_DATABASE_URL } : 'embedded';
  if (database === 'embedded') return database;
  if (
    database &&
    typeof database === 'object' &&
    typeof database.url === 'string' &&
    /^(postgres(ql)?|mysql|mariadb):\/\//.test(database.url)
  )
    return database;
  throw new InvalidOptionsError(
    `testing: database must be 'embedded', { url: 'postgresql://…' } or { url: 'mysql://…' } (MariaDB) (got ${JSON.stringify(database)}).`,
  );
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Creates a database for one test file (from the schema's template) on the chosen server; returns
 * it and the function that drops it (and leaves the embedded server).
 */
export async function openTestDatabase(
  option: TestDatabaseOption | undefined,
  schema: TestSchemaOptions | undefined,
  embeddedDir: string | undefined,
): Promise<{ db: DurableTestDatabase; close: () => Promise<void> }> {
  const chosen = resolveOption(option);
  if (chosen !== 'embedded' && isMysqlUrl(chosen.url)) return openMysqlTestDatabase(chosen.url, PREFIX, schema ?? {}, alive);
  const recipe = templateRecipe(schema);
  let serverUrl: string;
  let leave = async () => {};
  if (chosen === 'embedded') {
    const { startEmbeddedPostgres } = await import('../embedded-postgres/embedded-postgres.js');
    const server = await startEmbeddedPostgres({
      dataDir: embeddedDir ?? join('node_modules', '.cache', 'nestjs-durable', 'postgres'),
      migrationsDir: null,
    });
    serverUrl = server.url;
    leave = async () => void (await server.leave());
    await dropAbandonedDatabases(serverUrl, PREFIX, alive).catch(() => []);
  } else {
    serverUrl = chosen.url;
    // Databases of killed test processes: only on this machine's server can their pids be checked.
    if (['127.0.0.1', 'localhost', '[::1]'].includes(new URL(serverUrl).hostname))
      await dropAbandonedDatabases(serverUrl, PREFIX, alive).catch(() => []);
  }
  const template = `${PREFIX}tpl_${createHash('sha256').update(recipe.key).digest('hex').slice(0, 16)}`;
  const name = `${PREFIX}${process.pid}_${randomBytes(4).toString('hex')}`;
  try {
    await createDatabaseFromTemplate(serverUrl, template, name, recipe.build);
  } catch (err) {
    await leave().catch(() => {});
    throw err;
  }
  return {
    db: { name, url: databaseUrl(serverUrl, name), kind: chosen === 'embedded' ? 'embedded' : 'url' },
    close: async () => {
      try {
        await dropDatabase(serverUrl, name);
      } finally {
        await leave();
      }
    },
  };
}
