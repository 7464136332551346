import { AdminService } from '../../libs/durable/src/admin/admin-service.js';
import { parseFilter, parseListQuery } from '../../libs/durable/src/admin/params.js';
import { COUNT_CAP } from '../../libs/durable/src/store/admin-list.js';
import { countByStatusWithin } from '../../libs/durable/src/store/admin-counts.js';
import type { DurableEngine } from 'nestjs-durable';
import { EngineHarness } from '../support/engine-harness.js';

/**
 * The runs list's per-status counts have a time budget: a filter that leaves some status few
 * matches reads every candidate row to count them (3–6 s at 3 million runs, `npm run bench --
 * scale`). Past the budget the list answers with the planner's estimates, marked as such.
 */
describe('admin list counts within a time budget', () => {
  let h: EngineHarness;
  let engine: DurableEngine;
  const RUNS = 60_000;

  beforeAll(async () => {
    h = await EngineHarness.create('admin_counts');
    engine = await h.engine({ job: async () => 1 }, {}, false); // not started: the runs stay PENDING
    for (let i = 0; i < RUNS; i += 10_000)
      await engine.startMany(Array.from({ length: 10_000 }, (_, k) => ({ workflow: 'job', input: { n: i + k } })));
    await h.query(`UPDATE durable_runs SET status = 'SUCCEEDED', finished_at = now() WHERE (input->>'n')::int % 4 = 0`);
    await h.query('ANALYZE durable_runs');
  }, 120_000);
  afterAll(() => h.close());

  it('counts exactly within the budget', async () => {
    const all = await countByStatusWithin(engine.storeForTools, parseFilter({}), COUNT_CAP);
    expect(all).toMatchObject({ estimated: false, counts: { PENDING: COUNT_CAP + 1, SUCCEEDED: COUNT_CAP + 1, FAILED: 0 } });
    const none = await countByStatusWithin(engine.storeForTools, parseFilter({ queue: 'nowhere' }), COUNT_CAP);
    expect(none).toEqual({ estimated: false, counts: expect.objectContaining({ PENDING: 0, SUCCEEDED: 0, FAILED: 0 }) });
  });

  it("past the budget, answers the planner's estimates (no error, no wait), marked estimated", async () => {
    // A queue no run is in: each status's count reads all of its rows to find none (60,000 in all).
    const started = Date.now();
    const slow = await countByStatusWithin(engine.storeForTools, parseFilter({ queue: 'nowhere' }), COUNT_CAP, 1);
    expect(slow.estimated).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
    for (const n of Object.values(slow.counts)) expect(Number.isInteger(n) && n >= 0).toBe(true);
    // An estimate of a filter every run matches is near the real figure (ANALYZE ran).
    const broad = await countByStatusWithin(engine.storeForTools, parseFilter({ workflow: 'job' }), COUNT_CAP, 1);
    expect(broad.estimated).toBe(true);
    expect(broad.counts.PENDING).toBeGreaterThan(RUNS * 0.6);
    expect(broad.counts.PENDING).toBeLessThan(RUNS * 0.9);
  });

  it('the list says whether its counts are exact (GET runs: countsEstimated)', async () => {
    const admin = new AdminService(() => engine);
    const page = await admin.listRuns(parseListQuery({ limit: '5' }));
    expect(page).toMatchObject({ countsEstimated: false, countsCapped: ['PENDING', 'SUCCEEDED'], total: 2 * COUNT_CAP });
    expect(page.items).toHaveLength(5);
  });
});
