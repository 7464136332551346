import { claim, sweepExpiredLeases } from '../../libs/durable/src/store/leases.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { createStore, type Store } from '../../libs/durable/src/store/store.js';
import { EngineHarness, sleep } from '../support/engine-harness.js';

/**
 * Found by the chaos run: the runs of a killed worker were swept back with available_at = now(),
 * behind the whole backlog of pending runs, and were re-claimed only when the backlog had drained
 * (seconds to minutes), far beyond lease + sweep interval.
 */
describe('recovery order', () => {
  let h: EngineHarness;
  let sql: Store;
  beforeAll(async () => {
    h = await EngineHarness.create('recovery_order');
    // The harness pool has no error listener: an idle connection cut by the final DROP DATABASE … (FORCE) would be an unhandled error.
    h.pool.on('error', () => {});
    sql = createStore(pgSqlClient(h.pool, { prepared: false }), { history: true });
  });
  afterAll(() => h.close());

  it('a run swept from a dead worker keeps its place in the queue (ahead of newer pending runs)', async () => {
    await h.query(
      `INSERT INTO durable_runs (id, workflow_name, queue, available_at) VALUES ('old', 'wf', 'q', now() - interval '1 minute')`,
    );
    const [claimed] = await claim(sql, 'q', 1, 'dead-worker', 1, ['wf']); // a 1 ms lease: expired at once
    expect(claimed.id).toBe('old');
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue, available_at)
                   SELECT 'backlog-' || i, 'wf', 'q', now() - interval '1 second' FROM generate_series(1, 50) i`);
    await sleep(5);
    expect(await sweepExpiredLeases(sql, 10)).toBe(1);
    const [next] = await claim(sql, 'q', 1, 'live-worker', 10_000, ['wf']);
    expect(next).toMatchObject({ id: 'old', epoch: 2, attempt: 2 });
  });
});
