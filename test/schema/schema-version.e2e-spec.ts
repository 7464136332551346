import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SchemaMissingError, SchemaOutdatedError, SchemaTooNewError } from '../../libs/durable/src/errors/index.js';
import { prismaSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { checkSchemaVersion, readSchemaState, SCHEMA_VERSION } from '../../libs/durable/src/store/schema-version.js';
import { createTestDatabase } from '../support/db.js';
import { prismaFor } from '../support/prisma.js';
import { applyMigrations, migrationNames, scratchDatabase, V1_LAST_MIGRATION, type ScratchDatabase } from './support/schema-db.js';

/** The startup check against real databases in each state it reports. */
describe('schema version check', () => {
  let db: ScratchDatabase | undefined;
  afterEach(async () => {
    await db?.drop();
    db = undefined;
  });

  it('expects the version that durable.prisma declares', () => {
    const prisma = readFileSync(join(process.cwd(), 'libs/durable/prisma/durable.prisma'), 'utf8');
    const declared = /model DurableSchema \{\s*version\s+Int\s+@id\s+@default\((\d+)\)/.exec(prisma);
    expect(declared && Number(declared[1])).toBe(SCHEMA_VERSION);
  });

  it('reports every missing object of an empty database and says to run init, or to apply schema.sql', async () => {
    db = await scratchDatabase('empty');
    const state = await readSchemaState(db.client);
    expect(state).toEqual({
      status: 'missing',
      version: null,
      missing: [
        'table durable_runs',
        'table durable_steps',
        'table durable_messages',
        'table durable_events',
        'table durable_run_events',
        'index durable_runs_claim_idx',
        'index durable_runs_wake_idx',
        'table durable_schema',
        'table durable_schedules',
        'table durable_queue_limits',
        'index durable_runs_running_idx',
        'table durable_hook_cursors',
        'table durable_rate_windows',
        'index durable_runs_dedupe_idx',
        'index durable_runs_debounce_idx',
      ],
    });
    const err = await checkSchemaVersion(db.client).catch((e) => e);
    expect(err).toBeInstanceOf(SchemaMissingError);
    expect(err.code).toBe('SCHEMA_MISSING');
    expect(err.message).toContain('`npx nestjs-durable init`');
    expect(err.message).toContain('`npx prisma migrate dev --name durable`');
    expect(err.message).toContain('node_modules/nestjs-durable/prisma/schema.sql');
  });

  it('calls the tables of the first release (no durable_schema) version 1 and says how to upgrade', async () => {
    db = await scratchDatabase('v1');
    await applyMigrations(db, migrationNames(V1_LAST_MIGRATION));
    expect(await readSchemaState(db.client)).toEqual({ status: 'older', version: 1, expected: SCHEMA_VERSION });
    const err = await checkSchemaVersion(db.client).catch((e) => e);
    expect(err).toBeInstanceOf(SchemaOutdatedError);
    expect(err.code).toBe('SCHEMA_OUTDATED');
    expect(err.message).toContain(
      `\`npx nestjs-durable init --upgrade\`, then \`npx prisma migrate dev --name durable_v${SCHEMA_VERSION}\``,
    );
    expect(err.message).toContain('node_modules/nestjs-durable/prisma/upgrades/1-to-2.sql');

    // The rest of the repository's migrations bring it to the current version.
    await applyMigrations(
      db,
      migrationNames().filter((m) => m > V1_LAST_MIGRATION),
    );
    expect(await readSchemaState(db.client)).toEqual({ status: 'current', version: SCHEMA_VERSION });
    await expect(checkSchemaVersion(db.client)).resolves.toBe(SCHEMA_VERSION);
  });

  it('lists every upgrade file, in order, when several versions behind', async () => {
    db = await scratchDatabase('v1of4');
    await applyMigrations(db, migrationNames(V1_LAST_MIGRATION));
    const err = await checkSchemaVersion(db.client, 4).catch((e) => e);
    expect(err).toBeInstanceOf(SchemaOutdatedError);
    expect(err.upgradeFiles).toEqual(['prisma/upgrades/1-to-2.sql', 'prisma/upgrades/2-to-3.sql', 'prisma/upgrades/3-to-4.sql']);
    expect(err.message).toContain('--name durable_v4');
  });

  it('refuses tables a newer release migrated, and says to upgrade the package', async () => {
    db = await scratchDatabase('newer');
    await applyMigrations(db, migrationNames());
    // What `prisma migrate dev` emits when a later durable.prisma says @default(SCHEMA_VERSION + 1).
    await db.exec(`ALTER TABLE "durable_schema" ALTER COLUMN "version" SET DEFAULT ${SCHEMA_VERSION + 1}`);
    expect(await readSchemaState(db.client)).toEqual({ status: 'newer', version: SCHEMA_VERSION + 1, expected: SCHEMA_VERSION });
    const err = await checkSchemaVersion(db.client).catch((e) => e);
    expect(err).toBeInstanceOf(SchemaTooNewError);
    expect(err.message).toContain('npm install nestjs-durable@latest');
  });

  it('names a missing claim index or a version column without its DEFAULT at the current version', async () => {
    db = await scratchDatabase('partial');
    await applyMigrations(db, migrationNames());
    await db.exec(`DROP INDEX durable_runs_wake_idx; ALTER TABLE durable_schema ALTER COLUMN version DROP DEFAULT`);
    expect(await readSchemaState(db.client)).toEqual({
      status: 'missing',
      version: null,
      missing: ['index durable_runs_wake_idx', 'the DEFAULT of durable_schema.version'],
    });
  });

  it('finds the tables through the search_path, like every other statement of the engine', async () => {
    db = await scratchDatabase('search_path');
    await db.exec(`CREATE SCHEMA app; SET search_path TO app`);
    await applyMigrations(db, migrationNames());
    expect(await readSchemaState(db.client)).toEqual({ status: 'current', version: SCHEMA_VERSION });
    await db.exec(`SET search_path TO public`);
    expect((await readSchemaState(db.client)).status).toBe('missing');
  });

  it('works through a Prisma client as well as through pg', async () => {
    const tdb = await createTestDatabase('schema_version_prisma');
    const prisma = prismaFor(tdb.url, 1);
    try {
      expect(await readSchemaState(prismaSqlClient(prisma))).toEqual({ status: 'current', version: SCHEMA_VERSION });
    } finally {
      await prisma.$disconnect();
      await tdb.drop();
    }
  });
});
