import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

/**
 * Prisma's own bookkeeping table, with the columns `prisma migrate deploy` creates, so the
 * Prisma CLI pointed at the embedded database sees these migrations as applied.
 */
const CREATE_MIGRATIONS_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  id                  VARCHAR(36) PRIMARY KEY NOT NULL,
  checksum            VARCHAR(64) NOT NULL,
  finished_at         TIMESTAMPTZ,
  migration_name      VARCHAR(255) NOT NULL,
  logs                TEXT,
  rolled_back_at      TIMESTAMPTZ,
  started_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
  applied_steps_count INTEGER NOT NULL DEFAULT 0
)`;

export interface MigrationResult {
  applied: string[];
  alreadyApplied: number;
  /** Applied migrations whose migration.sql changed since (never edit an applied migration). */
  modified: string[];
}

/** One Prisma migration: its folder name, the text of its migration.sql, and Prisma's checksum of it. */
export interface Migration {
  name: string;
  sql: string;
  /** sha256 of the file, hex: the checksum `prisma migrate deploy` records. */
  checksum: string;
}

/**
 * The migrations of a Prisma migrations folder in the order Prisma applies them: each
 * `<name>/migration.sql`, by folder name. Empty when the folder holds none; throws when the folder
 * does not exist.
 */
export function readMigrations(migrationsDir: string): Migration[] {
  if (!existsSync(migrationsDir)) throw new Error(`no migrations folder at ${migrationsDir} (a Prisma migrations folder)`);
  return readdirSync(migrationsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(migrationsDir, d.name, 'migration.sql')))
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const sql = readFileSync(join(migrationsDir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: createHash('sha256').update(sql).digest('hex') };
    });
}

/**
 * Applies prisma/migrations/<name>/migration.sql in name order, as `prisma migrate deploy` does:
 * each in its own transaction together with its _prisma_migrations row, so a crash leaves each
 * migration applied or not, and the Prisma CLI sees them as applied. Idempotent: applied ones are
 * skipped. Not safe to run twice at once on one database (the embedded server's startup lock
 * serializes its callers). The one migration applier of the package: the embedded Postgres, the
 * testing kit, the repository's tests and the benchmark all use it.
 */
export async function applyMigrations(url: string, migrationsDir: string): Promise<MigrationResult> {
  const migrations = readMigrations(migrationsDir);
  const db = new pg.Client({ connectionString: url });
  db.on('error', () => {}); // a server stopped under the client: the statement in flight reports it
  await db.connect();
  try {
    return await migrate(db, migrations);
  } finally {
    await db.end();
  }
}

async function migrate(db: pg.Client, migrations: Migration[]): Promise<MigrationResult> {
  await db.query(CREATE_MIGRATIONS_TABLE);
  const { rows } = await db.query<{ migration_name: string; checksum: string }>(
    `SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
  );
  const done = new Map(rows.map((r) => [r.migration_name, r.checksum]));
  const result: MigrationResult = { applied: [], alreadyApplied: 0, modified: [] };
  for (const { name, sql, checksum } of migrations) {
    const recorded = done.get(name);
    if (recorded !== undefined) {
      result.alreadyApplied++;
      if (recorded !== checksum) result.modified.push(name);
      continue;
    }
    await db.query('BEGIN');
    try {
      await db.query(sql); // no parameters: the simple query protocol, so a file of many statements is fine
      await db.query(
        `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count) VALUES ($1, $2, now(), $3, 1)`,
        [randomUUID(), checksum, name],
      );
      await db.query('COMMIT');
    } catch (err) {
      await db.query('ROLLBACK').catch(() => {});
      throw new Error(`migration ${name} failed: ${(err as Error).message}`, { cause: err });
    }
    result.applied.push(name);
  }
  return result;
}
