import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { createStore, type Store } from '../../libs/durable/src/store/store.js';
import { EngineHarness } from '../support/engine-harness.js';
import { claimAfterWaiting } from '../support/waiting-claim.js';

/**
 * Found by the chaos run on Citus: a worker froze while it held a limited queue's lock, and another
 * worker's claim waited for it. The frozen worker's runs were meanwhile swept and the waiting claim
 * took one of them, but its 'claimed' history row carried its transaction's start (now()), from
 * before the frozen worker's last checkpoints: the history said the run changed hands before its
 * previous holder's last writes. A claim's history row carries the time it took the run.
 */
describe('history of a limited claim that waited for its turn', () => {
  let h: EngineHarness;
  let store: Store;

  beforeAll(async () => {
    h = await EngineHarness.create('claim_history_time');
    store = createStore(pgSqlClient(h.pool, { prepared: false }), { history: true });
  });
  afterAll(() => h.close());

  it("records 'claimed' at the time the run was taken, not when the claim's transaction began", async () => {
    await h.query(`INSERT INTO durable_queue_limits (queue, global_concurrency) VALUES ('q', 5)`);
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue) SELECT 'due-' || i, 'wf', 'q' FROM generate_series(1, 3) i`);
    const { began, released, claimed } = await claimAfterWaiting(
      store,
      { queue: 'q', limit: 3, owner: 'late', leaseMs: 60_000, workflows: ['wf'] },
      1_000,
    );
    expect(claimed.runs).toHaveLength(3);

    const rows = await h.query<{ run_id: string; at: Date }>(
      `SELECT run_id, at FROM durable_run_events WHERE kind = 'claimed' AND detail ->> 'worker' = 'late' ORDER BY run_id`,
    );
    expect(rows.map((r) => r.run_id)).toEqual(['due-1', 'due-2', 'due-3']);
    for (const r of rows) {
      // Millisecond precision: the row's time may round down by up to half a millisecond.
      expect(r.at.getTime()).toBeGreaterThanOrEqual(released.getTime() - 1);
      expect(r.at.getTime()).toBeGreaterThan(began.getTime() + 900);
    }
  });
});
