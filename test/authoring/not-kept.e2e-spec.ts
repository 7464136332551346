import { Durable, DurableEngine, RunNotFoundError, Step, WorkflowRegistry, type EngineOptions, type WorkflowOptions } from 'nestjs-durable';
import { eventually, FAST, sleep } from '../support/engine-harness.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';

type Fn = (input: any) => Promise<unknown>;

/** The tables that hold a run's parts, by the column that names the run. */
const RUN_TABLES: Array<[string, string]> = [
  ['durable_runs', 'id'],
  ['durable_steps', 'run_id'],
  ['durable_run_events', 'run_id'],
  ['durable_messages', 'run_id'],
  ['durable_events', 'run_id'],
  ['durable_stream_chunks', 'run_id'],
];

class Ledger {
  constructor(private readonly db: () => KindDatabase) {}
  failures = new Map<string, number>();

  @Step({ transactional: true })
  async book(runId: string) {
    await Durable.tx<any>().$executeRawUnsafe(
      this.db().sql('INSERT INTO test_ledger (run_id, step, amount) VALUES (?, ?, ?)'),
      runId,
      'book',
      1,
    );
    return 'booked';
  }

  @Step({ retries: { maxAttempts: 2, initialDelayMs: 10 } })
  async flakyOnce(key: string) {
    const n = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, n);
    if (n === 1) throw new Error('first attempt fails');
    return n;
  }
}

/** @Workflow({ deleteOnSuccess: true }): a run that succeeds is deleted by its end, with everything that belongs to it. */
describe.each(DATABASES)('runs that are not kept, on %s', (kind) => {
  let db: KindDatabase;
  const engines: DurableEngine[] = [];
  const ledger = new Ledger(() => db);
  const notKept: WorkflowOptions = { deleteOnSuccess: true };

  const workflows: Record<string, [Fn, WorkflowOptions]> = {
    job: [
      async (input: { id: string }) => {
        await ledger.book(input.id);
        await ledger.flakyOnce(input.id);
        await Durable.stream<string>('log').write('booked');
        await Durable.setEvent('state', 'booked');
        const note = await Durable.recv<string>('note', { timeoutMs: 10_000 });
        return { booked: input.id, note };
      },
      notKept,
    ],
    quick: [async (input: { n: number }) => Durable.step('double', async () => input.n * 2), notKept],
    failing: [
      async () => {
        await Durable.step('ok', async () => 1);
        return Durable.step('bad', async () => Promise.reject(new Error('always')), { retries: { maxAttempts: 1 } });
      },
      notKept,
    ],
    parent: [
      async () => {
        const child = await Durable.startChild<number>('quick', { n: 21 });
        return { child: child.id, value: await child.result() };
      },
      notKept,
    ],
    kept: [async (input: { n: number }) => Durable.step('double', async () => input.n * 2), {}],
    slow: [async (input: { ms: number }) => Durable.step('wait', () => sleep(input.ms).then(() => input.ms)), notKept],
  };

  async function engine(options: EngineOptions = {}): Promise<DurableEngine> {
    const registry = new WorkflowRegistry();
    for (const [name, [run, opts]] of Object.entries(workflows)) registry.register({ name, queue: 'default', options: opts, run });
    const e = new DurableEngine({ registry, connection: db.url, prisma: db.prisma, options: { ...FAST, ...options } });
    engines.push(e);
    await e.start();
    return e;
  }

  /** How many rows of each run table name the run. */
  const rowsOf = async (id: string) => {
    const counts: Record<string, number> = {};
    for (const [table, column] of RUN_TABLES)
      counts[table] = Number((await db.query<{ n: unknown }>(`SELECT count(*) AS n FROM ${table} WHERE ${column} = ?`, [id]))[0].n);
    return counts;
  };
  const none = Object.fromEntries(RUN_TABLES.map(([t]) => [t, 0]));

  beforeAll(async () => {
    db = await openDatabase(kind, `not_kept_${kind}`);
  });
  afterEach(async () => {
    for (const e of engines.splice(0)) await e.stop().catch(() => {});
  });
  afterAll(() => db.close());

  it('deletes a run that succeeds with its steps, history, messages, events and stream; its handle here gets the output', async () => {
    const e = await engine();
    const h = await e.startRun<{ booked: string; note: string }>('job', { id: 'job-1' }, { id: 'job-1' });
    await eventually(async () => (await rowsOf('job-1')).durable_stream_chunks === 1);
    expect((await rowsOf('job-1')).durable_steps).toBeGreaterThanOrEqual(3);
    await e.send('job-1', 'note', 'hello');
    await expect(h.result({ timeoutMs: 10_000 })).resolves.toEqual({ booked: 'job-1', note: 'hello' });
    expect(await rowsOf('job-1')).toEqual(none);
    expect(await e.getRun('job-1')).toBeNull();
    // The transactional step's write is the app's: it stays, once.
    expect(await db.query("SELECT run_id FROM test_ledger WHERE run_id = 'job-1'")).toEqual([{ run_id: 'job-1' }]);
    // The id is free again: a start with it is a new run.
    const again = await e.startRun('quick', { n: 2 }, { id: 'job-1' });
    await expect(again.result({ timeoutMs: 10_000 })).resolves.toBe(4);
  });

  it('keeps failed runs, children, and runs of other workflows ended in the same statements', async () => {
    const e = await engine();
    const failed = await e.startRun('failing', {});
    await expect(failed.result({ timeoutMs: 10_000 })).rejects.toThrow('always');
    expect((await e.getRun(failed.id))?.status).toBe('FAILED');
    expect((await rowsOf(failed.id)).durable_steps).toBe(2);

    const parent = await e.startRun<{ child: string; value: number }>('parent', {});
    const { child, value } = await parent.result({ timeoutMs: 10_000 });
    expect(value).toBe(42);
    expect(await e.getRun(parent.id)).toBeNull();
    expect((await e.getRun(child))?.status).toBe('SUCCEEDED');

    const handles = await e.startMany(
      Array.from({ length: 40 }, (_, i) => ({ workflow: i % 2 ? 'quick' : 'kept', input: { n: i }, options: { id: `mixed-${i}` } })),
    );
    expect(await Promise.all(handles.map((h) => h.result({ timeoutMs: 10_000 })))).toEqual(handles.map((_, i) => i * 2));
    const left = await db.query<{ id: string; status: string }>("SELECT id, status FROM durable_runs WHERE id LIKE 'mixed-%'");
    expect(left.map((r) => r.id).sort()).toEqual(
      handles
        .filter((_, i) => i % 2 === 0)
        .map((h) => h.id)
        .sort(),
    );
    expect(new Set(left.map((r) => r.status))).toEqual(new Set(['SUCCEEDED']));
    expect(Number((await db.query<{ n: unknown }>("SELECT count(*) AS n FROM durable_steps WHERE run_id LIKE 'mixed-%'"))[0].n)).toBe(20);
  });

  it('a message sent while the run ends (its transaction open across the end) is not left behind', async () => {
    const e = await engine();
    const h = await e.startRun('slow', { ms: 400 }, { id: 'slow-1' });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    // A sender whose transaction stays open while the run ends: its message must not outlive the run.
    const sender = db.prisma.$transaction(
      async (tx: any) => {
        await e.send('slow-1', 'extra', 1, { tx });
        await held;
      },
      { timeout: 20_000 },
    );
    await sleep(1_000); // the run's step is done: its end waits for the sender's locks
    release();
    await sender;
    await expect(h.result({ timeoutMs: 15_000 })).resolves.toBe(400);
    await eventually(async () => (await rowsOf('slow-1')).durable_runs === 0);
    expect(await rowsOf('slow-1')).toEqual(none);
  });

  it("keeps a run cancelled with compensation; elsewhere a deleted run's handle says it is gone", async () => {
    const e = await engine();
    const waiting = await e.startRun('job', { id: 'job-2' }, { id: 'job-2' });
    await eventually(async () => (await rowsOf('job-2')).durable_stream_chunks === 1);
    await e.cancel('job-2', { compensate: true });
    await expect(waiting.result({ timeoutMs: 10_000 })).rejects.toThrow(/cancelled/i);
    expect((await e.getRun('job-2'))?.status).toBe('CANCELLED');

    const client = new DurableEngine({ registry: new WorkflowRegistry(), connection: db.url, options: { ...FAST, worker: false } });
    engines.push(client);
    await client.start();
    const h = await e.startRun('quick', { n: 1 });
    await expect(h.result({ timeoutMs: 10_000 })).resolves.toBe(2);
    await expect(client.handle(h.id).result({ timeoutMs: 1_000 })).rejects.toThrow(RunNotFoundError);
  });
});
