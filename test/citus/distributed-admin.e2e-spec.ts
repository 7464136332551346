import { Durable, verifyRuns, WorkflowFailedError, WorkflowRegistry, type BackfillInput } from 'nestjs-durable';
import type { DurableEngine } from 'nestjs-durable';
import { AdminService } from '../../libs/durable/src/admin/admin-service.js';
import { parseListQuery } from '../../libs/durable/src/admin/params.js';
import type { LiveEvent } from '../../libs/durable/src/admin/live-feed.js';
import { runRunsCommand } from '../../libs/durable/src/cli/runs-command.js';
import { partitionOf, partitionSchema } from '../../libs/durable/src/store/partitions.js';
import { CitusCluster, describeCitus } from '../support/citus-cluster.js';
import { EngineHarness, eventually } from '../support/engine-harness.js';

const PARTITIONS = 5;

/** The admin API, the live feed and the runs CLI in distributed mode: every read merges the partitions. */
describeCitus('distributed mode on Citus: admin API', () => {
  let cluster: CitusCluster;
  let h: EngineHarness;
  let engine: DurableEngine;
  let admin: AdminService;
  let later: string;

  /** Every run, read from each partition: [id, status] newest first, as the list orders them. */
  const allRuns = async () => {
    const each = Array.from({ length: PARTITIONS }, (_, k) => `SELECT id, status, created_at FROM ${partitionSchema(k)}.durable_runs`);
    return h.query<{ id: string; status: string; created_at: Date }>(`${each.join(' UNION ALL ')} ORDER BY created_at DESC, id DESC`);
  };

  /**
   * A page of the runs list with exact counts. The list counts within a time budget, else it
   * answers the planner's estimate (marked): a loaded machine may run out of time, so it asks again.
   */
  const exactList = (query: Record<string, string>) =>
    eventually(
      async () => {
        const page = await admin.listRuns(parseListQuery(query));
        return page.countsEstimated ? null : page;
      },
      30_000,
      'a list with exact counts',
    );

  const workflows = {
    work: async (input: { n: number }) => {
      await Durable.step('one', async () => input.n);
      return Durable.step('two', async () => input.n * 2);
    },
    fill: async (input: BackfillInput) =>
      Durable.backfill<number, number>(input, {
        read: async (after, limit) => [1, 2, 3, 4, 5].filter((n) => after === null || n > after).slice(0, limit),
        key: (n) => n,
        process: async () => {},
        batchSize: 2,
      }),
    fails: async () => {
      await Durable.step(
        'boom',
        async () => {
          throw new Error('declined');
        },
        { retries: 0 },
      );
    },
  };

  beforeAll(async () => {
    cluster = await CitusCluster.start();
    const db = await cluster.database('durable_citus_admin', PARTITIONS);
    h = EngineHarness.on(db);
    engine = await h.engine(workflows);
    admin = new AdminService(() => engine);
    const runs = [
      ...Array.from({ length: 20 }, (_, n) => engine.startRun('work', { n })),
      ...Array.from({ length: 6 }, () => engine.startRun('fails', {})),
    ];
    for (const run of await Promise.all(runs))
      await run.result({ timeoutMs: 60_000 }).catch((err: unknown) => {
        if (!(err instanceof WorkflowFailedError)) throw err; // the six 'fails' runs
      });
    later = (await engine.startRun('work', { n: 99 }, { runAt: new Date(Date.now() + 3_600_000) })).id;
  }, 180_000);
  afterAll(async () => {
    await admin?.close();
    await h?.close();
    await cluster?.stop();
  });

  it('lists the runs of every partition in one order, page after page, with per-status counts', async () => {
    const all = await allRuns();
    expect(new Set(all.map((r) => partitionOf(r.id, PARTITIONS))).size).toBeGreaterThan(2);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<AdminService['listRuns']>> = await exactList({ limit: '7', ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((r) => r.id));
      expect(page.total).toBe(all.length);
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all.map((r) => r.id));
    const failed = await exactList({ status: 'FAILED' });
    expect(failed.items.map((r) => r.id).sort()).toEqual(
      all
        .filter((r) => r.status === 'FAILED')
        .map((r) => r.id)
        .sort(),
    );
    expect(failed.counts).toMatchObject({ FAILED: 6, SUCCEEDED: 20, PENDING: 1 });
  });

  it('shows a run from its partition, with its steps and why it has not started', async () => {
    const done = (await allRuns()).find((r) => r.status === 'SUCCEEDED')!;
    const detail = await admin.getRun(done.id);
    expect(detail.steps.map((s) => (s as { name: string }).name)).toEqual(['one', 'two']);
    const pending = await admin.getRun(later);
    expect((pending as unknown as { status: string }).status).toBe('PENDING');
    expect(pending.startBlockers).toMatchObject({ claimable: false, queueRunning: 0, reasons: [expect.stringMatching(/^not due/)] });
  });

  it('adds up the statistics, charts and versions of every partition', async () => {
    const stats = await admin.stats(60);
    expect(stats.totals.counts).toMatchObject({ SUCCEEDED: 20, FAILED: 6, PENDING: 1 });
    const charts = await admin.charts('1h');
    expect(charts.buckets.reduce((n, b) => n + b.started, 0)).toBe(27);
    expect(charts.buckets.reduce((n, b) => n + b.failed, 0)).toBe(6);
    const versions = await admin.versions();
    expect(JSON.stringify(versions)).toContain('"work"');
  });

  it('sends the statistics on the live feed (no change events: transaction ids are per node)', async () => {
    const events: LiveEvent[] = [];
    const stop = admin.live.subscribe({ run: null, stats: true }, (e) => events.push(e));
    try {
      await admin.live.tick();
      const stats = events.find((e) => e.type === 'stats');
      expect(stats).toBeDefined();
      expect(JSON.stringify(stats)).toContain('"SUCCEEDED":20');
    } finally {
      stop();
    }
  });

  it('runs the runs CLI against the coordinator, and shows the flow-control overview', async () => {
    // As exactList: asked again until the counts are exact (a loaded machine may run out of the budget).
    const page = await eventually(
      async () => {
        let out = '';
        const code = await runRunsCommand(
          ['list', '--json', '--limit', '50'],
          { cwd: process.cwd(), out: (t) => (out += t), err: () => {} },
          { DATABASE_URL: h.db.url },
        );
        expect(code).toBe(0);
        const listed = JSON.parse(out) as { total: number; countsEstimated: boolean; items: unknown[] };
        return listed.countsEstimated ? null : listed;
      },
      30_000,
      'a runs CLI list with exact counts',
    );
    expect(page.items).toHaveLength(27);
    expect(page.total).toBe(27);
    expect(await admin.flow.overview()).toEqual({ queues: [], debounced: [], singletons: [] });
  });

  it('verifies the runs of every partition, page by page (npx nestjs-durable verify)', async () => {
    const registry = new WorkflowRegistry();
    for (const [name, run] of Object.entries(workflows))
      registry.register({ name, queue: 'default', options: {}, run: run as (input: unknown) => Promise<unknown> });
    const report = await verifyRuns(registry, h.db.url, { pageSize: 4, finishedWithinMs: 3_600_000 });
    expect(report).toMatchObject({ ok: true, checked: 27, failed: 0 });
    expect(report.workflows.map((w) => [w.workflow, w.checked])).toEqual([
      ['fails', 6],
      ['work', 21],
    ]);
  });

  // Last (with the bulk actions): they change the counts above.
  it('lists the backfills of every partition, newest first', async () => {
    const ids = ['fill-a', 'fill-b', 'fill-c'];
    expect(new Set(ids.map((id) => partitionOf(id, PARTITIONS))).size).toBeGreaterThan(1);
    for (const id of ids) await (await engine.startRun('fill', {}, { id })).result({ timeoutMs: 30_000 });
    const { backfills } = await admin.backfills.list(10);
    expect(backfills.map((b) => [b.runId, b.status, b.done])).toEqual([...ids].reverse().map((id) => [id, 'SUCCEEDED', 5]));
    expect((await admin.backfills.list(2)).backfills.map((b) => b.runId)).toEqual(['fill-c', 'fill-b']);
  }, 60_000);

  it('runs bulk actions over every partition: delete the failed runs, cancel a pending one', async () => {
    const failed = (await allRuns()).filter((r) => r.status === 'FAILED').map((r) => r.id);
    expect(new Set(failed.map((id) => partitionOf(id, PARTITIONS))).size).toBeGreaterThan(1);
    expect(await engine.bulk('delete', { statuses: ['FAILED'] }, { batchSize: 2 })).toEqual({
      action: 'delete',
      matched: 6,
      done: 6,
      skipped: 0,
    });
    expect((await allRuns()).filter((r) => failed.includes(r.id))).toEqual([]);
    expect(await engine.bulk('cancel', { ids: [later] })).toEqual({ action: 'cancel', matched: 1, done: 1, skipped: 0 });
    expect((await allRuns()).find((r) => r.id === later)?.status).toBe('CANCELLED');
  });
});
