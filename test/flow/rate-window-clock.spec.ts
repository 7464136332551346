import { claimLimited } from '../../libs/durable/src/store/flow-claim.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { createStore, type Store } from '../../libs/durable/src/store/store.js';
import { EngineHarness, sleep } from '../support/engine-harness.js';
import { mostInWindow } from '../support/intervals.js';
import { waitingAtBegin } from '../support/waiting-claim.js';

/**
 * Found by the three-process rate-limit test (119 starts in one 10-s window of started_at under a
 * limit of 100, at load ~70). A claim's transaction reads now() when it begins, but it claims only
 * once it holds the queue's limits row: under load a worker may wait seconds between its BEGIN and
 * its turn. Its starts were then counted, trimmed and recorded at that older time, in a window whose
 * older starts a claim with a later clock had already trimmed away. Here one claim begins, waits
 * while another (later, one slot free) trims the window, then claims: the limit must hold over the
 * recorded started_at, in any window.
 */
describe('rate window: a claim that began before another claimed first', () => {
  const PERIOD = 10_000;
  const LIMIT = 10;
  let h: EngineHarness;
  let store: Store;

  beforeAll(async () => {
    h = await EngineHarness.create('rate_window_clock');
    store = createStore(pgSqlClient(h.pool, { prepared: false }), { history: false });
  });
  afterAll(() => h.close());

  it('counts every start of any window of the recorded start times, however long a claim waited for its turn', async () => {
    await h.query(`INSERT INTO durable_queue_limits (queue, rate_limit, rate_period_ms) VALUES ('q', $1, $2)`, [LIMIT, PERIOD]);
    // The window is full: LIMIT runs started 9 s ago (recorded as a claim records them).
    const [{ s }] = await h.query<{ s: Date }>(`SELECT (now() - interval '9 seconds')::timestamptz(3) AS s`);
    await h.query(
      `INSERT INTO durable_runs (id, workflow_name, queue, status, started_at, finished_at)
       SELECT 'done-' || i, 'wf', 'q', 'SUCCEEDED', $1, now() FROM generate_series(1, $2::int) i`,
      [s, LIMIT],
    );
    await h.query(
      `INSERT INTO durable_rate_windows (queue, key, starts, last_start_at) VALUES ('q', '', array_fill($1::timestamptz(3), ARRAY[$2::int]), $1)`,
      [s, LIMIT],
    );
    await h.query(`INSERT INTO durable_runs (id, workflow_name, queue) SELECT 'due-' || i, 'wf', 'q' FROM generate_series(1, 40) i`);

    // Worker X begins its claim now (its window still holds the 10 starts) and is held before its turn.
    let go!: () => void;
    let begun!: () => void;
    const hasBegun = new Promise<void>((r) => (begun = r));
    const x = claimLimited(waitingAtBegin(store, new Promise<void>((r) => (go = r)), begun), {
      queue: 'q',
      limit: 20,
      owner: 'x',
      leaseMs: 60_000,
      workflows: ['wf'],
    });
    await hasBegun;
    // 1.5 s later the 10 starts are out of the window for worker Y, which takes its one free slot.
    await sleep(1_500);
    const y = await claimLimited(store, { queue: 'q', limit: 1, owner: 'y', leaseMs: 60_000, workflows: ['wf'] });
    expect(y.runs).toHaveLength(1);
    go();
    const claimed = (await x).runs.length;

    const starts = (
      await h.query<{ t: Date }>(`SELECT started_at AS t FROM durable_runs WHERE started_at IS NOT NULL ORDER BY started_at`)
    ).map((r) => r.t.getTime());
    expect({ claimed, most: mostInWindow(starts, PERIOD) }).toEqual({ claimed: LIMIT - 1, most: LIMIT });
  });
});
