import { startChildren } from '../../libs/durable/src/store/children.js';
import { claim, sweepExpiredLeases } from '../../libs/durable/src/store/leases.js';
import { insertRun, insertRuns } from '../../libs/durable/src/store/runs.js';
import type { NewRun } from '../../libs/durable/src/store/rows.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { createStore, type Store } from '../../libs/durable/src/store/store.js';
import { engineStatements } from '../../libs/durable/src/store/statement.js';
import { EngineHarness, sleep } from '../support/engine-harness.js';

const run = (id: string, o: Partial<NewRun> = {}): NewRun => ({
  id,
  workflowName: 'wf',
  queue: 'q',
  input: '{}',
  priority: 0,
  runAt: null,
  delayMs: null,
  timeoutMs: null,
  parentId: null,
  appVersion: null,
  concurrencyKey: null,
  tags: [],
  ...o,
});

/**
 * The claim's order (QUEUE_ORDER in store/leases.ts): the work of workflows already started goes
 * ahead of workflows not started yet. Found by the chaos run: children queued behind the whole
 * backlog while their parents held the slots (0 of 2,000 finished after 35 s), and the runs of a
 * killed worker, swept back after a wait, were re-claimed only when the backlog had drained.
 */
describe('claim order', () => {
  let h: EngineHarness;
  let sql: Store;
  beforeAll(async () => {
    h = await EngineHarness.create('recovery_order');
    // The harness pool has no error listener: an idle connection cut by the final DROP DATABASE … (FORCE) would be an unhandled error.
    h.pool.on('error', () => {});
    sql = createStore(pgSqlClient(h.pool, { prepared: false }), { history: true });
  });
  afterAll(() => h.close());
  beforeEach(() => h.query('TRUNCATE durable_runs CASCADE'));

  /** A batch of roots started in one statement (one startMany: they share one start time). */
  const batch = (prefix: string, n: number, o: Partial<NewRun> = {}) =>
    insertRuns(
      sql,
      Array.from({ length: n }, (_, i) => run(`${prefix}-${String(i).padStart(3, '0')}`, o)),
      null,
    );
  const next = async (owner = 'live-worker', leaseMs = 10_000) =>
    (await claim(sql, { queue: 'q', limit: 1, owner, leaseMs, workflows: ['wf'] }))[0];

  it('a run swept from a dead worker keeps its place in the queue (ahead of newer pending runs)', async () => {
    await h.query(
      `INSERT INTO durable_runs (id, workflow_name, queue, available_at) VALUES ('old', 'wf', 'q', now() - interval '1 minute')`,
    );
    const [claimed] = await claim(sql, { queue: 'q', limit: 1, owner: 'dead-worker', leaseMs: 1, workflows: ['wf'] }); // a 1 ms lease: expired at once
    expect(claimed.id).toBe('old');
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue, available_at)
                   SELECT 'backlog-' || i, 'wf', 'q', now() - interval '1 second' FROM generate_series(1, 50) i`);
    await sleep(5);
    expect(await sweepExpiredLeases(sql, 10)).toBe(1);
    expect(await next()).toMatchObject({ id: 'old', epoch: 2, attempt: 2 });
  });

  it('a child goes ahead of the runs started with its parent and after it', async () => {
    await batch('root', 50);
    const parent = await next();
    expect(parent.id).toBe('root-000');
    await batch('later', 20);
    const child = run('root-000:child:1', { parentId: parent.id });
    await startChildren(sql, {
      runId: parent.id,
      epoch: parent.epoch,
      appVersion: null,
      children: [{ seq: 0, name: 'child', child, output: '{}', inheritTags: true }],
    });
    expect((await next()).id).toBe(child.id);
    // and the grandchild, started by the child, next
    const c = await h.query<{ epoch: number }>(`SELECT lease_epoch AS epoch FROM durable_runs WHERE id = $1`, [child.id]);
    const grandchild = run('root-000:child:1:child:0', { parentId: child.id });
    await startChildren(sql, {
      runId: child.id,
      epoch: c[0].epoch,
      appVersion: null,
      children: [{ seq: 0, name: 'g', child: grandchild, output: '{}', inheritTags: true }],
    });
    expect((await next()).id).toBe(grandchild.id);
    expect((await next()).id).toBe('root-001');
  });

  it('a run woken from a wait, or recovered after one, goes ahead of the runs started with it that have not started', async () => {
    await batch('root', 50);
    const woken = await next();
    const recovered = await next('dead-worker', 1);
    expect([woken.id, recovered.id]).toEqual(['root-000', 'root-001']);
    await sleep(20);
    // root-000 waited and is woken now (WAITING, due now); root-001 got a signal while running (its
    // available_at bumped to now) and its worker died: both are due later than the rest of their batch.
    await h.query(
      `UPDATE durable_runs SET status = 'WAITING', lease_owner = NULL, lease_expires_at = NULL, available_at = now() WHERE id = 'root-000'`,
    );
    await h.query(`UPDATE durable_runs SET available_at = now() WHERE id = 'root-001'`);
    expect(await sweepExpiredLeases(sql, 10)).toBe(1);
    await batch('later', 20);
    const ids = (await claim(sql, { queue: 'q', limit: 3, owner: 'live-worker', leaseMs: 10_000, workflows: ['wf'] }))
      .map((r) => r.id)
      .sort();
    expect(ids).toEqual(['root-000', 'root-001', 'root-002']);
  });

  it('priorities still come first, and a delayed start takes its place when it is due', async () => {
    await batch('low', 5, { priority: 5 });
    await insertRun(sql, run('delayed', { delayMs: 50 }));
    await batch('root', 5);
    expect((await next()).id).toBe('root-000');
    await sleep(60);
    await batch('later', 5);
    // due now, placed at its due time: after the roots started before it was due, before the later ones
    const order = [];
    for (let i = 0; i < 6; i++) order.push((await next()).id);
    expect(order).toEqual(['root-001', 'root-002', 'root-003', 'root-004', 'delayed', 'later-000']);
    for (let i = 0; i < 4; i++) await next();
    expect((await next()).id).toBe('low-000');
  });

  it('the claim stays an index scan of the claim index with 100,000 pending runs (and 10,000 delayed ones)', async () => {
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue, status, finished_at, created_at)
                   SELECT 'done-' || i, 'wf', 'q', 'SUCCEEDED', now(), now() - interval '1 day' FROM generate_series(1, 100000) i`);
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue, order_at, available_at)
                   SELECT 'p-' || i, 'wf', 'q', now() - (i % 1000) * interval '1 second', now() - (i % 1000) * interval '1 second'
                   FROM generate_series(1, 100000) i`);
    await batch('delayed', 1, { delayMs: 3_600_000 });
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue, order_at, available_at)
                   SELECT 'delayed-' || i, 'wf', 'q', now() + interval '1 hour', now() + interval '1 hour' FROM generate_series(1, 10000) i`);
    await h.query('VACUUM ANALYZE durable_runs');
    const params = ["'q'", '10', "'A'", '1000', "ARRAY['wf']", 'false'];
    const [row] = await h.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${engineStatements()
        .get('durable_claim')!
        .replace(/\$(\d)/g, (_, n) => params[Number(n) - 1])}`,
    );
    const nodes = flatten(row['QUERY PLAN'][0].Plan);
    const scans = nodes.filter((n) => n['Relation Name'] === 'durable_runs' && n['Node Type'] !== 'ModifyTable');
    // pending runs from the claim index in QUEUE_ORDER (no sort of the backlog), waiting ones from the wake index, the
    // claimed rows by key (the primary key or the id-prefix index: both are on id alone)
    const byKey = (index?: string) => (index === 'durable_runs_pkey' || index === 'durable_runs_id_pattern_idx' ? 'id key' : index);
    expect(scans.map((n) => `${n['Node Type']} ${byKey(n['Index Name'])}`).sort()).toEqual([
      'Index Scan durable_runs_claim_idx',
      'Index Scan durable_runs_wake_idx',
      'Index Scan id key',
    ]);
    // the one sort orders the ≤ 2 × 10 runs found (pending and woken), not the backlog
    for (const n of nodes.filter((x) => x['Node Type'] === 'Sort')) expect(n['Actual Rows']).toBeLessThanOrEqual(20);
    expect(nodes.find((n) => n['Index Name'] === 'durable_runs_claim_idx')!['Actual Rows']).toBe(10);
    await h.query('TRUNCATE durable_runs CASCADE');
  }, 120_000);
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  Plans?: PlanNode[];
}
const flatten = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(flatten)];
