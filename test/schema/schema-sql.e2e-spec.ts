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

  it("upgrades/2-to-3.sql gives the unfinished runs their place in the queue (order_at), as the app's migration does", async () => {
    const db = await scratch('upgrade_order');
    await applyMigrations(db, migrationNames(V1_LAST_MIGRATION));
    await db.exec(readFileSync(join(pkg, 'prisma/upgrades/1-to-2.sql'), 'utf8'));
    await db.exec(`
      INSERT INTO durable_runs (id, workflow_name, status, created_at, available_at, started_at) VALUES
        ('due', 'wf', 'PENDING', '2026-01-01T00:00:01Z', '2026-01-01T00:00:01Z', NULL),
        ('delayed', 'wf', 'PENDING', '2026-01-01T00:00:02Z', '2030-01-01T00:00:00Z', NULL),
        ('started', 'wf', 'WAITING', '2026-01-01T00:00:03Z', '2026-01-01T00:00:09Z', '2026-01-01T00:00:04Z'),
        ('done', 'wf', 'SUCCEEDED', '2026-01-01T00:00:05Z', '2026-01-01T00:00:05Z', '2026-01-01T00:00:05Z')`);
    await db.exec(readFileSync(join(pkg, 'prisma/upgrades/2-to-3.sql'), 'utf8'));
    // (a finished run keeps the upgrade's time: now)
    const rows = await db.client.query<{ id: string; order_at: Date; upgraded: boolean }>(
      `SELECT id, order_at, order_at > now() - interval '1 hour' AS upgraded FROM durable_runs ORDER BY id`,
    );
    expect(Object.fromEntries(rows.map((r) => [r.id, r.id === 'done' ? r.upgraded : r.order_at.toISOString()]))).toEqual({
      delayed: '2030-01-01T00:00:00.000Z',
      done: true,
      due: '2026-01-01T00:00:01.000Z',
      started: '2026-01-01T00:00:02.999Z',
    });
  });
});
