import { claimIdleLimitMs, claimLimited } from '../../libs/durable/src/store/flow-claim.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { createStore, type Store } from '../../libs/durable/src/store/store.js';
import { EngineHarness, sleep } from '../support/engine-harness.js';

/**
 * Found by `npm run chaos`: a worker frozen (SIGSTOP) between the statements of a limited claim held
 * its queue's limits row, so every other worker's claim of that queue waited until it was continued
 * (6 s, twice the lease). Postgres now ends such a session after a third of the lease idle in its
 * transaction: the other claims go on, and the stalled claim fails (nothing of it is committed).
 */
describe('a limited claim whose process stalls mid-transaction', () => {
  const LEASE_MS = 900;
  let h: EngineHarness;
  let store: Store;

  beforeAll(async () => {
    h = await EngineHarness.create('limited_claim_stall');
    store = createStore(pgSqlClient(h.pool, { prepared: false }), { history: false });
  });
  afterAll(() => h.close());

  /** A store whose claim stops for `ms` right after it has locked the queue's limits row (says when). */
  function stallingStore(ms: number, locked: () => void): Store {
    const base = store.sql;
    return {
      ...store,
      sql: {
        ...base,
        transaction: (fn) =>
          base.transaction((tx) =>
            fn({
              ...tx,
              query: async (s, params) => {
                const rows = await tx.query(s, params);
                if (typeof s !== 'string' && s.name === 'durable_lock_queue_limits') {
                  locked();
                  await sleep(ms);
                }
                return rows as never;
              },
            }),
          ),
      },
    };
  }

  it('does not hold up the other claims of its queue for longer than its idle limit', async () => {
    expect(claimIdleLimitMs(LEASE_MS)).toBe(300);
    await h.query(`INSERT INTO durable_queue_limits (queue, global_concurrency) VALUES ('q', 5)`);
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue) SELECT 'due-' || i, 'wf', 'q' FROM generate_series(1, 10) i`);

    let locked!: () => void;
    const hasLocked = new Promise<void>((r) => (locked = r));
    const stalled = claimLimited(stallingStore(4_000, locked), { queue: 'q', limit: 3, owner: 'x', leaseMs: LEASE_MS, workflows: ['wf'] });
    const stalledOutcome = stalled.then(
      () => 'claimed',
      (e: Error) => e.message,
    );
    await hasLocked;

    const began = Date.now();
    const other = await claimLimited(store, { queue: 'q', limit: 2, owner: 'y', leaseMs: LEASE_MS, workflows: ['wf'] });
    const waited = Date.now() - began;
    expect(other.runs).toHaveLength(2);
    // Without the limit it waits for the stalled claim (4 s); with it, for about 300 ms.
    expect(waited).toBeLessThan(2_500);

    expect(await stalledOutcome).toMatch(/terminat|idle-in-transaction|Connection/i);
    const owners = await h.query(`SELECT lease_owner, count(*)::int AS n FROM durable_runs WHERE status = 'RUNNING' GROUP BY 1`);
    expect(owners).toEqual([{ lease_owner: 'y', n: 2 }]);
  });
});
