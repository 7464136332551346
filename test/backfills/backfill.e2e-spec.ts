import { Durable, DurableEngine, IllegalTransitionError, WorkflowRegistry, type BackfillInput, type BackfillView } from 'nestjs-durable';
import { AdminService } from '../../libs/durable/src/admin/admin-service.js';
import { runBackfillsCommand } from '../../libs/durable/src/cli/backfills-command.js';
import { eventually, FAST } from '../support/engine-harness.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';

/**
 * Durable.backfill on every database: a keyset walk in transactional batches. Every row is
 * processed exactly once (`done` counts how often), across a pause and a handover to another
 * engine; a dry run counts without writing; progress, pause and resume through the client.
 */
const ROWS = 2_000;

describe.each(DATABASES)('backfills on %s', (kind) => {
  let db: KindDatabase;
  let engines: DurableEngine[] = [];

  type Tx = {
    $queryRawUnsafe<T>(sql: string, ...p: unknown[]): Promise<T>;
    $executeRawUnsafe(sql: string, ...p: unknown[]): Promise<number>;
  };

  function registry(): WorkflowRegistry {
    const r = new WorkflowRegistry();
    r.register({
      name: 'markItems',
      queue: 'backfills',
      options: {},
      run: (input: unknown) =>
        Durable.backfill<{ id: number }, number>(input as BackfillInput, {
          batchSize: 100,
          read: async (after, limit, tx: Tx) =>
            (
              await tx.$queryRawUnsafe<Array<{ id: unknown }>>(
                db.sql('SELECT id FROM bf_items WHERE id > ? ORDER BY id LIMIT ?'),
                after ?? 0,
                limit,
              )
            ).map((row) => ({ id: Number(row.id) })),
          key: (row) => row.id,
          process: async (rows, tx: Tx) => {
            await tx.$executeRawUnsafe(
              db.sql(`UPDATE bf_items SET done = done + 1 WHERE id IN (${rows.map(() => '?').join(', ')})`),
              ...rows.map((x) => x.id),
            );
          },
          estimate: async () => Number((await db.query<{ n: unknown }>('SELECT count(*) AS n FROM bf_items'))[0].n),
        }),
    });
    return r;
  }

  async function startEngine(workerId?: string): Promise<DurableEngine> {
    const engine = new DurableEngine({
      registry: registry(),
      connection: db.url,
      prisma: db.prisma,
      options: { ...FAST, ...(workerId ? { workerId } : {}) },
    });
    await engine.start();
    engines.push(engine);
    return engine;
  }

  const doneCounts = async () =>
    (await db.query<{ done: unknown; n: unknown }>('SELECT done, count(*) AS n FROM bf_items GROUP BY done ORDER BY done')).map((r) => [
      Number(r.done),
      Number(r.n),
    ]);

  beforeAll(async () => {
    db = await openDatabase(kind, `backfills_${kind}`);
    await db.query('CREATE TABLE bf_items (id INT NOT NULL PRIMARY KEY, done INT NOT NULL DEFAULT 0)');
    const ids = Array.from({ length: ROWS }, (_, i) => i + 1);
    await db.query(`INSERT INTO bf_items (id) VALUES ${ids.map(() => '(?)').join(', ')}`, ids);
  });
  beforeEach(async () => {
    await db.query('UPDATE bf_items SET done = 0');
  });
  afterEach(async () => {
    await Promise.all(engines.map((e) => e.stop()));
    engines = [];
  });
  afterAll(async () => {
    await db.close();
  });

  it('processes every row exactly once, in batches, and reports its progress; a second start under its id runs nothing more', async () => {
    const engine = await startEngine();
    const handle = await engine.startRun('markItems', {}, { id: 'mark-all' });
    await expect(handle.result({ timeoutMs: 30_000 })).resolves.toEqual({ rows: ROWS, batches: 21, dryRun: false, after: ROWS });
    expect(await doneCounts()).toEqual([[1, ROWS]]);

    const again = await engine.startRun('markItems', {}, { id: 'mark-all' });
    expect(again.outcome).toBe('existing');
    await again.result({ timeoutMs: 10_000 });
    expect(await doneCounts()).toEqual([[1, ROWS]]);

    const [view] = (await engine.backfills()).filter((b) => b.runId === 'mark-all');
    expect(view).toMatchObject<Partial<BackfillView>>({
      workflowName: 'markItems',
      status: 'SUCCEEDED',
      done: ROWS,
      estimated: ROWS,
      batches: 21,
      dryRun: false,
      paused: false,
      etaSeconds: 0,
    });

    // The command line: the list, and a pause of a finished backfill refused with the reason.
    const out: string[] = [];
    const err: string[] = [];
    const io = { cwd: process.cwd(), out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
    expect(await runBackfillsCommand(['list', '--database-url', db.url], io)).toBe(0);
    expect(out.join('\n')).toMatch(/mark-all\s+markItems\s+SUCCEEDED\s+2000 \/ 2000/);
    expect(await runBackfillsCommand(['pause', 'mark-all', '--database-url', db.url], io)).toBe(1);
    expect(err.join('\n')).toContain('it is SUCCEEDED');
    expect(await runBackfillsCommand(['pause', '--database-url', db.url], io)).toBe(2);
  });

  it('a dry run counts the rows and writes nothing; several backfills run at once', async () => {
    const engine = await startEngine();
    const [handle, other] = await Promise.all([
      engine.startRun('markItems', { dryRun: true, batchSize: 500 }),
      engine.startRun('markItems', { dryRun: true, batchSize: 300 }),
    ]);
    await expect(handle.result({ timeoutMs: 30_000 })).resolves.toEqual({ rows: ROWS, batches: 5, dryRun: true, after: ROWS });
    await expect(other.result({ timeoutMs: 30_000 })).resolves.toEqual({ rows: ROWS, batches: 7, dryRun: true, after: ROWS });
    expect(await doneCounts()).toEqual([[0, ROWS]]);
  });

  it('pauses after its batch (waiting without a slot), resumes where it stopped, and is handed over to another engine with nothing done twice', async () => {
    const first = await startEngine('first');
    const handle = await first.startRun('markItems', { rowsPerSecond: 1_000, batchSize: 50 }, { id: 'mark-paused' });
    await eventually(async () => Number((await db.query<{ n: unknown }>('SELECT count(*) AS n FROM bf_items WHERE done = 1'))[0].n) >= 200);
    // The admin API's pause (what the dashboard's button sends).
    await new AdminService(() => first).backfills.pause(handle.id);
    await eventually(async () => (await first.getRun(handle.id))?.status === 'WAITING', 15_000, 'the backfill to wait');
    const view = (await new AdminService(() => first).backfills.list(50)).backfills.find((b) => b.runId === handle.id)!;
    expect(view.paused).toBe(true);
    const doneWhilePaused = Number((await db.query<{ n: unknown }>('SELECT count(*) AS n FROM bf_items WHERE done = 1'))[0].n);
    expect(doneWhilePaused).toBe(view.done);
    expect(doneWhilePaused).toBeLessThan(ROWS);

    // Another engine takes over (the first one is gone); a resume lets the backfill go on there.
    await first.stop();
    const second = await startEngine('second');
    await second.resumeBackfill(handle.id);
    await eventually(async () => (await second.getRun(handle.id))?.status === 'SUCCEEDED', 30_000, 'the backfill to end');
    expect(await doneCounts()).toEqual([[1, ROWS]]);
    expect((await second.getRun(handle.id))?.output).toMatchObject({ rows: ROWS, after: ROWS });
    const err = await second.pauseBackfill(handle.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IllegalTransitionError);
  });

  it('refuses a bad batch size or rate with the reason, as the run’s failure', async () => {
    const engine = await startEngine();
    const bad = await engine.startRun('markItems', { batchSize: 0 });
    await expect(bad.result({ timeoutMs: 15_000 })).rejects.toThrow(/batchSize must be an integer from 1 to 100000 \(got 0\)/);
    const rate = await engine.startRun('markItems', { rowsPerSecond: -5 });
    await expect(rate.result({ timeoutMs: 15_000 })).rejects.toThrow(/rowsPerSecond must be a positive number or null/);
    expect(await doneCounts()).toEqual([[0, ROWS]]);
  });
});
