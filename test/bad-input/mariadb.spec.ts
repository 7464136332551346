import {
  DurableEngine,
  InvalidScheduleError,
  ScheduleConflictError,
  ScheduleNotFoundError,
  SchemaMissingError,
  WorkflowRegistry,
  type WorkflowOptions,
} from 'nestjs-durable';
import { FAST } from '../support/engine-harness.js';
import { MARIADB_AVAILABLE, openDatabase, type KindDatabase } from '../support/databases.js';
import { mariaQuery } from '../support/mariadb.js';

/**
 * What MariaDB refuses, and how: a feature not available on MySQL-family databases yet is refused
 * with UnsupportedDatabaseError when it is configured (at start for declared ones, at the call for
 * runtime ones), a case-insensitive collation and missing tables at start — nothing half-written.
 */
(MARIADB_AVAILABLE ? describe : describe.skip)('bad input on MariaDB', () => {
  let db: KindDatabase;
  const engines: DurableEngine[] = [];
  const engine = async (workflows: Record<string, WorkflowOptions> = { plain: {} }, options = {}) => {
    const registry = new WorkflowRegistry();
    for (const [name, opts] of Object.entries(workflows))
      registry.register({ name, queue: 'default', options: opts, run: async () => 'ok' });
    const e = new DurableEngine({ registry, connection: db.url, prisma: db.prisma, options: { ...FAST, ...options } });
    engines.push(e);
    return e;
  };
  beforeAll(async () => {
    db = await openDatabase('mariadb', 'refusals');
  });
  afterAll(async () => {
    for (const e of engines) await e.stop().catch(() => {});
    await db.close();
  });

  it('schedules: a declared one is stored at start; bad, duplicate or unknown ones are refused with a typed error, nothing written', async () => {
    const e = await engine({ ticking: { schedule: { cron: '0 3 * * *' } } });
    await e.start();
    expect(await db.query('SELECT id, source FROM durable_schedules')).toEqual([{ id: 'ticking', source: 'declared' }]);
    await expect(e.schedules.create({ id: 'bad', workflow: 'ticking', cron: '*/0 * * * *' })).rejects.toBeInstanceOf(InvalidScheduleError);
    await expect(e.schedules.create({ id: 'ticking', workflow: 'ticking', cron: '0 4 * * *' })).rejects.toBeInstanceOf(
      ScheduleConflictError,
    );
    await expect(e.schedules.pause('nope')).rejects.toBeInstanceOf(ScheduleNotFoundError);
    expect(await db.query('SELECT id, cron FROM durable_schedules')).toEqual([{ id: 'ticking', cron: '0 3 * * *' }]);
    await e.stop();
  });

  it('queue limits: declared ones are stored at start; bad runtime ones are refused with INVALID_ARGUMENT, nothing stored', async () => {
    const limited = await engine({ plain: {} }, { queues: { default: { globalConcurrency: 2 } } });
    await limited.start();
    expect(await db.query('SELECT queue, global_concurrency, source FROM durable_queue_limits')).toEqual([
      { queue: 'default', global_concurrency: 2, source: 'declared' },
    ]);
    for (const bad of [{ globalConcurrency: 0 }, { keyConcurrency: -1 }, { rate: 100 }]) {
      await expect(limited.flowControl.setQueueLimits('other', bad as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    expect(await db.query("SELECT queue FROM durable_queue_limits WHERE queue = 'other'")).toEqual([]);
    await limited.stop();
    await db.query('DELETE FROM durable_queue_limits');
  });

  it('singleton and debounced starts: a second start with the key joins the first; bad combinations are refused, no run written', async () => {
    const e = await engine();
    await e.start();
    const first = await e.startRun('plain', {}, { dedupeKey: 'k', delayMs: 60_000 });
    const second = await e.startRun('plain', {}, { dedupeKey: 'k' });
    expect(second.id).toBe(first.id);
    await expect(e.startRun('plain', {}, { debounce: { key: 'd', periodMs: 1_000 }, delayMs: 5 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    const d1 = await e.startRun('plain', { n: 1 }, { debounce: { key: 'd', periodMs: 60_000 } });
    const d2 = await e.startRun('plain', { n: 2 }, { debounce: { key: 'd', periodMs: 60_000 } });
    expect(d2.id).toBe(d1.id);
    expect((await db.query<{ n: unknown }>('SELECT count(*) AS n FROM durable_runs')).map((r) => Number(r.n))).toEqual([2]);
    await e.stop();
    await db.query('DELETE FROM durable_runs');
  });

  it('refuses tables whose collation compares ids case-insensitively, saying what to run', async () => {
    await mariaQuery(
      db.name,
      `ALTER TABLE durable_steps DROP FOREIGN KEY durable_steps_run_id_fkey;
      ALTER TABLE durable_run_tags DROP FOREIGN KEY durable_run_tags_run_id_fkey;
      ALTER TABLE durable_runs CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci`,
    );
    try {
      const err = await (await engine()).start().catch((x: unknown) => x);
      expect(err).toBeInstanceOf(SchemaMissingError);
      expect((err as Error).message).toContain('durable_runs.id is utf8mb4_general_ci');
      expect((err as Error).message).toContain('Create the tables from node_modules/nestjs-durable/prisma/schema.mysql.sql');
    } finally {
      await mariaQuery(
        db.name,
        `ALTER TABLE durable_runs CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
        ALTER TABLE durable_steps ADD CONSTRAINT durable_steps_run_id_fkey FOREIGN KEY (run_id) REFERENCES durable_runs (id) ON DELETE CASCADE ON UPDATE CASCADE;
        ALTER TABLE durable_run_tags ADD CONSTRAINT durable_run_tags_run_id_fkey FOREIGN KEY (run_id) REFERENCES durable_runs (id) ON DELETE CASCADE ON UPDATE CASCADE`,
      );
    }
  });

  it('names the missing tables of a database without the schema', async () => {
    await mariaQuery(db.name, 'DROP TABLE durable_hook_cursors');
    const err = await (await engine()).start().catch((x: unknown) => x);
    expect(err).toBeInstanceOf(SchemaMissingError);
    expect((err as SchemaMissingError).missing).toEqual(['table durable_hook_cursors']);
  });
});
