import { runStore } from '../../libs/durable/src/store/run-store.js';
import { pgSqlClient, type SqlClient } from '../../libs/durable/src/store/sql-client.js';
import { EngineHarness, sleep } from '../support/engine-harness.js';

/** The store's statements against real Postgres: claim, fencing, heartbeat, sweeper. */
describe('store: claim, fencing, sweeper', () => {
  let h: EngineHarness;
  let sql: SqlClient;
  beforeAll(async () => {
    h = await EngineHarness.create('store');
    sql = pgSqlClient(h.pool);
  });
  afterAll(() => h.close());
  beforeEach(() => h.query('TRUNCATE durable_runs CASCADE'));

  const insert = (n: number, extra: string = '') =>
    h.query(`INSERT INTO durable_runs (id, workflow_name, queue, input ${extra ? ', priority, available_at' : ''})
             SELECT 'r' || i, 'wf', 'q', '{}'::jsonb ${extra} FROM generate_series(1, $1) i`, [n]);

  it('claims disjoint batches under concurrency, one statement each', async () => {
    await insert(100);
    const [a, b, c] = await Promise.all([
      runStore.claim(sql, 'q', 60, 'A', 10_000, ['wf']),
      runStore.claim(sql, 'q', 60, 'B', 10_000, ['wf']),
      runStore.claim(sql, 'q', 60, 'C', 10_000, ['wf']),
    ]);
    const ids = [...a, ...b, ...c].map((r) => r.id);
    expect(ids).toHaveLength(100);
    expect(new Set(ids).size).toBe(100);
    expect(a.every((r) => r.epoch === 1 && r.attempt === 1 && r.steps.length === 0)).toBe(true);
    expect(await runStore.claim(sql, 'q', 10, 'D', 10_000, ['wf'])).toEqual([]);
  });

  it('claims by priority then age, never before available_at, only its queue', async () => {
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue, priority, available_at) VALUES
      ('late', 'wf', 'q', 0, now() + interval '1 hour'), ('low', 'wf', 'q', 5, now() - interval '1 minute'),
      ('high-new', 'wf', 'q', 0, now() - interval '1 second'), ('high-old', 'wf', 'q', 0, now() - interval '2 seconds'),
      ('other', 'wf', 'other-q', 0, now())`);
    const got = await runStore.claim(sql, 'q', 10, 'A', 10_000, ['wf']);
    expect(got.map((r) => r.id)).toEqual(['high-old', 'high-new', 'low']);
  });

  it('claims only workflows the worker has code for', async () => {
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue) VALUES ('known', 'wf', 'q'), ('newer', 'wf-v2', 'q')`);
    expect((await runStore.claim(sql, 'q', 10, 'old-instance', 10_000, ['wf'])).map((r) => r.id)).toEqual(['known']);
  });

  it('uses the partial claim index', async () => {
    const [plan] = await h.query(`EXPLAIN (FORMAT JSON) SELECT id FROM durable_runs
      WHERE queue = 'q' AND status IN ('PENDING','WAITING') AND available_at <= now() ORDER BY priority, available_at LIMIT 10`);
    expect(JSON.stringify(plan)).toContain('durable_runs_claim_idx');
  });

  it('fences every write of a worker whose lease moved on (zombie)', async () => {
    await insert(1);
    const [mine] = await runStore.claim(sql, 'q', 1, 'A', 100, ['wf']);
    const step = { runId: mine.id, seq: 0, name: 's', status: 'SUCCEEDED' as const, output: '1', error: null, attempts: 1, durationMs: 1 };
    expect(await runStore.insertStep(sql, { ...step, epoch: mine.epoch })).toBe(true);
    await sleep(150); // lease expires; another instance sweeps and claims
    expect(await runStore.sweepExpiredLeases(sql, 10)).toBe(1);
    const [theirs] = await runStore.claim(sql, 'q', 1, 'B', 10_000, ['wf']);
    expect(theirs.epoch).toBe(mine.epoch + 1);
    expect(theirs.steps.map((s) => s.seq)).toEqual([0]);
    // The zombie A: heartbeat, checkpoint and completion all match nothing.
    expect((await runStore.heartbeat(sql, [{ id: mine.id, epoch: mine.epoch }], 10_000)).size).toBe(0);
    expect(await runStore.insertStep(sql, { ...step, seq: 1, epoch: mine.epoch })).toBe(false);
    expect(await runStore.finishRun(sql, mine.id, mine.epoch, 'SUCCEEDED', '"zombie"', null)).toBe(false);
    // The owner B writes normally.
    expect(await runStore.insertStep(sql, { ...step, seq: 1, epoch: theirs.epoch })).toBe(true);
    expect(await runStore.finishRun(sql, mine.id, theirs.epoch, 'SUCCEEDED', '"owner"', null)).toBe(true);
    const [row] = await h.query(`SELECT status, output, lease_owner FROM durable_runs WHERE id = $1`, [mine.id]);
    expect(row).toEqual({ status: 'SUCCEEDED', output: 'owner', lease_owner: null });
  });

  it('heartbeat extends only the leases still held, in one statement', async () => {
    await insert(3);
    const runs = await runStore.claim(sql, 'q', 3, 'A', 1_000, ['wf']);
    await runStore.cancel(sql, runs[0].id);
    const kept = await runStore.heartbeat(sql, runs.map((r) => ({ id: r.id, epoch: r.epoch })), 60_000);
    expect([...kept].sort()).toEqual([runs[1].id, runs[2].id].sort());
    const rows = await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE lease_expires_at > now() + interval '50 seconds'`);
    expect(rows[0].n).toBe(2);
  });

  it('sweeps expired leases in bounded batches, safely from several instances at once', async () => {
    await insert(1200);
    await runStore.claim(sql, 'q', 1200, 'dead', 1, ['wf']);
    await sleep(20);
    const results = await Promise.all([0, 1, 2].map(async () => {
      let total = 0;
      for (;;) {
        const n = await runStore.sweepExpiredLeases(sql, 250);
        expect(n).toBeLessThanOrEqual(250);
        total += n;
        if (n === 0) return total;
      }
    }));
    expect(results.reduce((a, b) => a + b, 0)).toBe(1200);
    const [row] = await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE status = 'PENDING' AND lease_owner IS NULL`);
    expect(row.n).toBe(1200);
  });

  it('fails runs past their deadline, and deletes finished runs past retention with their steps', async () => {
    await h.query(`INSERT INTO durable_runs (id, workflow_name, status, deadline_at) VALUES
      ('overdue', 'wf', 'WAITING', now() - interval '1 second'), ('fine', 'wf', 'WAITING', now() + interval '1 hour')`);
    expect(await runStore.sweepDeadlines(sql, 10)).toEqual(['overdue']);
    const [r] = await h.query(`SELECT status, error FROM durable_runs WHERE id = 'overdue'`);
    expect(r.status).toBe('FAILED');
    expect(r.error.message).toMatch(/exceeded its deadline.*timeoutMs/);

    await h.query(`INSERT INTO durable_runs (id, workflow_name, status, finished_at) VALUES
      ('old', 'wf', 'SUCCEEDED', now() - interval '2 days'), ('recent', 'wf', 'SUCCEEDED', now())`);
    await h.query(`INSERT INTO durable_steps (run_id, seq, name, status) VALUES ('old', 0, 's', 'SUCCEEDED')`);
    expect(await runStore.sweepRetention(sql, 24 * 3600_000, 10)).toBe(1);
    expect(await h.query(`SELECT id FROM durable_runs WHERE id IN ('old', 'recent')`)).toEqual([{ id: 'recent' }]);
    expect(await h.query(`SELECT * FROM durable_steps WHERE run_id = 'old'`)).toEqual([]);
  });
});
