import { IdempotencyConflictError, Step } from 'nestjs-durable';
import { EngineHarness, eventually, sleep, STEADY } from '../support/engine-harness.js';

/**
 * Concurrent starts made outside a caller's transaction are group-committed: one INSERT (one
 * transaction) for the starts of one moment, each caller with its own answer, its run durable
 * when start() returns. Judged by the rows' xmin (the transaction that inserted them).
 */
describe('start batching (group commit of concurrent starts)', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('startbatch', STEADY);
  });
  afterAll(() => h.close());
  const transactions = async (prefix: string) =>
    (await h.query<{ n: number }>(`SELECT count(DISTINCT xmin::text)::int AS n FROM durable_runs WHERE id LIKE $1`, [`${prefix}%`]))[0].n;

  class Steps {
    @Step() async twice(n: number) {
      return n * 2;
    }
  }
  const steps = new Steps();

  it('starts queued by a starter (no worker) are group-committed (fewer transactions than starts), and each run exists when its start returns', async () => {
    const engine = await h.engine({ queued: async (n: number) => n }, { worker: false });
    const seen: boolean[] = [];
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        await engine.startRun('queued', i, { id: `q-${i}` });
        const [row] = await h.query(`SELECT status FROM durable_runs WHERE id = $1`, [`q-${i}`]);
        seen.push(row?.status === 'PENDING');
      }),
    );
    expect(seen).toEqual(Array(40).fill(true));
    expect(await transactions('q-')).toBeLessThan(40);
    const events = await h.query(`SELECT count(*)::int AS n FROM durable_run_events WHERE run_id LIKE 'q-%' AND kind = 'created'`);
    expect(events[0].n).toBe(40);
  });

  it('starts claimed in-process are group-committed and each run executes once', async () => {
    const engine = await h.engine({ doubled: async (n: number) => steps.twice(n) }, { concurrency: 30 });
    const handles = await Promise.all(Array.from({ length: 30 }, (_, i) => engine.startRun('doubled', i, { id: `c-${i}` })));
    expect(await Promise.all(handles.map((x) => x.result({ timeoutMs: 20_000 })))).toEqual(Array.from({ length: 30 }, (_, i) => i * 2));
    expect(await transactions('c-')).toBeLessThan(30);
    const claims = await h.query(
      `SELECT run_id, count(*)::int AS n FROM durable_run_events WHERE run_id LIKE 'c-%' AND kind = 'claimed' GROUP BY run_id`,
    );
    expect(claims).toHaveLength(30);
    expect(claims.every((c) => c.n === 1)).toBe(true);
    const attempts = await h.query(`SELECT DISTINCT attempt, lease_epoch FROM durable_runs WHERE id LIKE 'c-%'`);
    expect(attempts).toEqual([{ attempt: 1, lease_epoch: 1 }]);
  });

  it('a claim of a nearly empty queue does not hold every free slot: starts meanwhile still take the in-process path', async () => {
    const engine = await h.engine({ quick: async (n: number) => n }, { concurrency: 20 });
    await sleep(300); // the polls find the queue empty, so the next claim asks for a few runs only
    const blocker = await h.pool.connect();
    try {
      // Every statement on the runs table waits behind this lock: the next poll's claim stays in flight.
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE durable_runs IN ACCESS EXCLUSIVE MODE');
      await h.lockWaiters(); // the poll's claim
      const starts = Array.from({ length: 3 }, (_, i) => engine.startRun('quick', i, { id: `f-${i}` }));
      await sleep(50);
      await blocker.query('COMMIT');
      const handles = await Promise.all(starts);
      await Promise.all(handles.map((x) => x.result({ timeoutMs: 10_000 })));
    } finally {
      blocker.release();
    }
    // Inserted already claimed by this process: started in the statement that created the run.
    const rows = await h.query(`SELECT id FROM durable_runs WHERE id LIKE 'f-%' AND started_at = created_at ORDER BY id`);
    expect(rows.map((r) => r.id)).toEqual(['f-0', 'f-1', 'f-2']);
  });

  it('the same id twice in one batch makes one run; another workflow under that id is refused', async () => {
    const engine = await h.engine({ one: async () => 'one', other: async () => 'other' }, { worker: false });
    const [a, b, c] = await Promise.allSettled([
      engine.startRun('one', null, { id: 'dup' }),
      engine.startRun('one', null, { id: 'dup' }),
      engine.startRun('other', null, { id: 'dup' }),
    ]);
    expect(a.status).toBe('fulfilled');
    expect(b.status).toBe('fulfilled');
    expect(c.status === 'rejected' && c.reason).toBeInstanceOf(IdempotencyConflictError);
    expect(await h.query(`SELECT workflow_name FROM durable_runs WHERE id = 'dup'`)).toEqual([{ workflow_name: 'one' }]);
  });

  it('a start whose row the database refuses fails alone; the others of its batch are started', async () => {
    const engine = await h.engine({ keyed: async () => 'ok' }, { worker: false });
    // A NUL character cannot be stored in a text column: the statement fails for this run's data.
    const results = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) =>
        engine.startRun('keyed', i, { id: `k-${i}`, concurrencyKey: i === 4 ? 'a\u0000b' : `key-${i}` }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(Array.from({ length: 10 }, (_, i) => (i === 4 ? 'rejected' : 'fulfilled')));
    const rows = await h.query(`SELECT id FROM durable_runs WHERE id LIKE 'k-%' ORDER BY id`);
    expect(rows.map((r) => r.id)).toEqual(['k-0', 'k-1', 'k-2', 'k-3', 'k-5', 'k-6', 'k-7', 'k-8', 'k-9']);
  });

  it('a start inside a transaction is not batched: rolled back, its run does not exist', async () => {
    const engine = await h.engine({ txed: async () => 'ok' }, { worker: false });
    const inTx = h.prisma
      .$transaction(async (tx) => {
        await engine.startRun('txed', null, { id: 'tx-rolled-back', tx: tx as never });
        throw new Error('rollback');
      })
      .catch(() => undefined);
    await Promise.all([inTx, engine.startRun('txed', null, { id: 'tx-free' })]);
    await eventually(async () => (await h.query(`SELECT id FROM durable_runs WHERE id LIKE 'tx-%'`)).length === 1, 5_000, 'one row');
    expect(await h.query(`SELECT id FROM durable_runs WHERE id LIKE 'tx-%'`)).toEqual([{ id: 'tx-free' }]);
  });
});
