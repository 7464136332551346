import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { readSchemaState, SCHEMA_VERSION, upgradeSqlFiles } from '../../libs/durable/src/store/schema-version.js';
import {
  applyMigrations,
  durableCatalog,
  migrationNames,
  scratchDatabase,
  V1_LAST_MIGRATION,
  type ScratchDatabase,
} from './support/schema-db.js';

/**
 * prisma/schema.sql and prisma/upgrades/*.sql, for apps that run their own SQL migrations: what
 * scripts/durable-sql.mjs generates now, and the same tables as the Prisma migrations create.
 */
const pkg = join(process.cwd(), 'libs/durable');
const schemaSql = readFileSync(join(pkg, 'prisma/schema.sql'), 'utf8');

describe('plain SQL schema files', () => {
  const dbs: ScratchDatabase[] = [];
  const scratch = async (label: string) => {
    const db = await scratchDatabase(label);
    dbs.push(db);
    return db;
  };
  afterAll(async () => Promise.all(dbs.map((db) => db.drop())));

  it('are what scripts/durable-sql.mjs generates from durable.prisma now', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['scripts/durable-sql.mjs', '--check'], {
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    expect(stdout).toContain('Up to date: libs/durable/prisma/schema.sql, libs/durable/prisma/upgrades/1-to-2.sql');
  });

  it('exist for every step the startup check can ask for, and schema.sql is the current version', () => {
    for (const f of upgradeSqlFiles(1)) expect(existsSync(join(pkg, f))).toBe(true);
    expect(schemaSql).toContain(`-- nestjs-durable schema version ${SCHEMA_VERSION}:`);
    expect(schemaSql).toContain(`"version" INTEGER NOT NULL DEFAULT ${SCHEMA_VERSION}`);
    expect(schemaSql).not.toContain('CREATE SCHEMA');
  });

  it('schema.sql creates on an empty database what the Prisma migrations create, and the check accepts it', async () => {
    const fromSql = await scratch('sql');
    await fromSql.exec(schemaSql);
    expect(await readSchemaState(fromSql.client)).toEqual({ status: 'current', version: SCHEMA_VERSION });

    const fromMigrations = await scratch('migrations');
    await applyMigrations(fromMigrations, migrationNames());
    const catalog = await durableCatalog(fromSql);
    expect(catalog.length).toBeGreaterThan(50);
    expect(catalog).toEqual(await durableCatalog(fromMigrations));
  });

  it('schema.sql creates the tables in the schema the migration runs in', async () => {
    const db = await scratch('sql_app_schema');
    await db.exec(`CREATE SCHEMA app; SET search_path TO app; ${schemaSql}`);
    expect(await readSchemaState(db.client)).toEqual({ status: 'current', version: SCHEMA_VERSION });
    await db.exec('SET search_path TO public');
    expect((await readSchemaState(db.client)).status).toBe('missing');
  });

  it('upgrades/1-to-2.sql brings version-1 tables (main at 8e9a74a) to what schema.sql creates', async () => {
    const db = await scratch('upgrade');
    await applyMigrations(db, migrationNames(V1_LAST_MIGRATION));
    expect(await readSchemaState(db.client)).toEqual({ status: 'older', version: 1, expected: SCHEMA_VERSION });
    for (const f of upgradeSqlFiles(1)) await db.exec(readFileSync(join(pkg, f), 'utf8'));
    expect(await readSchemaState(db.client)).toEqual({ status: 'current', version: SCHEMA_VERSION });

    const fresh = await scratch('fresh');
    await fresh.exec(schemaSql);
    expect(await durableCatalog(db)).toEqual(await durableCatalog(fresh));
  });
});
