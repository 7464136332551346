import { Durable } from 'nestjs-durable';
import type { DurableEngine } from 'nestjs-durable';
import { AdminService } from '../../libs/durable/src/admin/admin-service.js';
import { partitionOf, partitionSchema, partitionText } from '../../libs/durable/src/store/partitions.js';
import { engineStatements } from '../../libs/durable/src/store/statement.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { createStore } from '../../libs/durable/src/store/store.js';
import { claimLimited } from '../../libs/durable/src/store/flow-claim.js';
import { CitusCluster, describeCitus } from '../support/citus-cluster.js';
import { EngineHarness, eventually } from '../support/engine-harness.js';
import { claimAfterWaiting } from '../support/waiting-claim.js';

const PARTITIONS = 6;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface RunRow {
  id: string;
  key: string | null;
  status: string;
  started_at: Date | null;
  finished_at: Date | null;
  /** Claims of the run: 1 = executed once, from started_at to finished_at. */
  attempt: number;
}

/**
 * Flow control in distributed mode on a real Citus cluster: a queue's limits are cluster-wide and
 * exact across the partitions (the limits row locked on every node, the executing runs counted over
 * every partition after the lock), claimed by two engines at once.
 */
describeCitus('distributed mode on Citus: flow control (queue limits, rate limits)', () => {
  let cluster: CitusCluster;
  let h: EngineHarness;

  /** The runs of a queue, read from every partition. */
  const runsOf = async (queue: string): Promise<RunRow[]> => {
    const each = Array.from(
      { length: PARTITIONS },
      (_, k) =>
        `SELECT id, concurrency_key AS key, status, started_at, finished_at, attempt FROM ${partitionSchema(k)}.durable_runs WHERE queue = $1`,
    );
    return h.query<RunRow>(each.join(' UNION ALL '), [queue]);
  };
  /** RUNNING runs of a queue per concurrency key, over every partition in one statement. */
  const runningNow = async (queue: string) => {
    const each = Array.from(
      { length: PARTITIONS },
      (_, k) => `SELECT concurrency_key AS k FROM ${partitionSchema(k)}.durable_runs WHERE queue = $1 AND status = 'RUNNING'`,
    );
    return h.query<{ k: string | null; n: number }>(`SELECT k, count(*)::int AS n FROM (${each.join(' UNION ALL ')}) r GROUP BY k`, [
      queue,
    ]);
  };
  /**
   * The most runs executing at once (from their start and end times), overall and per key, among the
   * runs claimed once: a run whose lease expired on a busy machine and was claimed again keeps its
   * first start, and its [start, end] would span the time it waited to be claimed again (the sampling
   * of the executing runs covers it).
   */
  const mostAtOnce = (runs: RunRow[], key?: string) => {
    const of = runs.filter((r) => r.started_at && r.attempt === 1 && (key === undefined || r.key === key));
    return Math.max(
      0,
      ...of.map((r) => of.filter((o) => o.started_at! <= r.started_at! && (!o.finished_at || o.finished_at > r.started_at!)).length),
    );
  };

  beforeAll(async () => {
    cluster = await CitusCluster.start();
    h = EngineHarness.on(await cluster.database('durable_citus_flow', PARTITIONS));
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await cluster?.stop();
  });

  it('keeps globalConcurrency and keyConcurrency across partitions and two engines; every run ends, keys take turns', async () => {
    const tenants = ['t0', 't1', 't2', 't3', 't4', 't5'];
    const job = [
      async (input: { tenant: string; n: number }) => Durable.step('work', async () => sleep(250).then(() => input.n)),
      { queue: 'tenants', concurrencyKey: (i: { tenant: string }) => i.tenant },
    ] as const;
    const options = { concurrency: 4, queues: { tenants: { concurrency: 4, globalConcurrency: 3, keyConcurrency: 1 } } };
    const engines: DurableEngine[] = [await h.engine({ job: [...job] }, options), await h.engine({ job: [...job] }, options)];
    const admin = new AdminService(() => engines[0]);
    try {
      const handles = await Promise.all(
        Array.from({ length: 30 }, (_, n) => engines[n % 2].startRun('job', { tenant: tenants[n % tenants.length], n })),
      );
      expect(new Set(handles.map((r) => partitionOf(r.id, PARTITIONS))).size).toBeGreaterThan(3);
      // Sample the executing runs over every partition while they run.
      let sampling = true;
      let most = 0;
      let mostPerKey = 0;
      let overview: Awaited<ReturnType<AdminService['flow']['overview']>> | null = null;
      const sampler = (async () => {
        while (sampling) {
          const now = await runningNow('tenants');
          most = Math.max(
            most,
            now.reduce((a, r) => a + r.n, 0),
          );
          mostPerKey = Math.max(mostPerKey, ...now.map((r) => r.n));
          // Read while runs execute: again until it shows one executing (the runs seen may end before it reads).
          const seenRunning = overview?.queues.find((l) => l.queue === 'tenants')?.running ?? 0;
          if (now.length && seenRunning === 0) overview = await admin.flow.overview();
          await sleep(25);
        }
      })();
      const results = (await Promise.all(handles.map((r) => r.result({ timeoutMs: 50_000 })))) as number[];
      sampling = false;
      await sampler;
      expect(results.sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, n) => n));
      expect(most).toBeGreaterThan(1);
      expect(most).toBeLessThanOrEqual(3);
      expect(mostPerKey).toBe(1);
      // From the runs' start and end times: never more than 3 at once, never 2 of one key.
      const runs = await runsOf('tenants');
      expect(runs.every((r) => r.status === 'SUCCEEDED')).toBe(true);
      expect(runs.filter((r) => r.attempt === 1).length).toBeGreaterThan(1);
      expect(mostAtOnce(runs)).toBeLessThanOrEqual(3);
      for (const t of tenants) expect(mostAtOnce(runs, t)).toBeLessThanOrEqual(1);
      // Keys take turns: among the first 12 starts, every tenant started at least once, none more than 3 times.
      const order = runs.filter((r) => r.started_at).sort((a, b) => +a.started_at! - +b.started_at!);
      const firstStarts = new Map<string, number>();
      for (const r of order.slice(0, 12)) firstStarts.set(r.key!, (firstStarts.get(r.key!) ?? 0) + 1);
      expect([...firstStarts.keys()].sort()).toEqual(tenants);
      expect(Math.max(...firstStarts.values())).toBeLessThanOrEqual(3);
      // The admin API's flow page, read while the runs ran: the queue's limits and its runs over every partition.
      expect(overview).not.toBeNull();
      const q = overview!.queues.find((l) => l.queue === 'tenants')!;
      expect(q).toMatchObject({ globalConcurrency: 3, keyConcurrency: 1, source: 'declared' });
      expect(q.running).toBeGreaterThanOrEqual(1);
      expect(q.running).toBeLessThanOrEqual(3);
      expect(q.running + q.due).toBeGreaterThanOrEqual(1);
      expect(overview!.debounced).toEqual([]);
    } finally {
      await admin.close();
      for (const e of engines) await e.stop();
    }
  }, 60_000);

  it('rate limits set at runtime (5 starts per 2 s, 2 per key) are never exceeded in any window; the admin API shows keys and usage', async () => {
    const quick = [
      async (input: { n: number }) => Durable.step('one', async () => input.n),
      { queue: 'rated', concurrencyKey: (i: { n: number }) => `k${i.n % 3}` },
    ] as const;
    const engines = [await h.engine({ quick: [...quick] }), await h.engine({ quick: [...quick] })];
    const admin = new AdminService(() => engines[0]);
    try {
      const view = await engines[0].flowControl.setQueueLimits('rated', {
        rateLimit: { limit: 5, periodMs: 2_000 },
        keyRateLimit: { limit: 2, periodMs: 2_000 },
      });
      expect(view).toMatchObject({ queue: 'rated', rateLimit: { limit: 5, periodMs: 2_000 }, source: 'runtime' });
      // Both engines follow the runtime limit (the change is announced and read again every sweep).
      await eventually(async () => (await engines[1].flowControl.queueLimits()).some((l) => l.queue === 'rated'), 5_000, 'the limit read');
      await sleep(300);
      const handles = await Promise.all(Array.from({ length: 12 }, (_, n) => engines[n % 2].startRun('quick', { n })));
      // Read while the runs start (12 at 5 per 2 s): once the first claim has counted a start.
      const rateUsage = async () => (await engines[1].flowControl.queueLimits()).find((l) => l.queue === 'rated')!;
      await eventually(async () => (await rateUsage()).rateUsed >= 1, 10_000, 'a start counted in the rate window');
      const usage = await rateUsage();
      expect(usage.rateUsed).toBeGreaterThanOrEqual(1);
      expect(usage.rateUsed).toBeLessThanOrEqual(5);
      const keys = (await admin.flow.keys('rated', 10)).keys;
      expect(keys.map((k) => k.key).sort()).toEqual(['k0', 'k1', 'k2']);
      for (const k of keys) expect(k.rateUsed).toBeLessThanOrEqual(2);
      await Promise.all(handles.map((r) => r.result({ timeoutMs: 30_000 })));
      const rated = await runsOf('rated');
      const starts = rated.map((r) => +r.started_at!).sort((a, b) => a - b);
      expect(starts).toHaveLength(12);
      // Any 6 starts in a row span at least the period: never 6 in one 2-s window.
      for (let i = 0; i + 5 < starts.length; i++) expect(starts[i + 5] - starts[i]).toBeGreaterThanOrEqual(2_000);
      // And any 3 starts of one key span at least its period: never 3 of a key in one 2-s window.
      for (const key of ['k0', 'k1', 'k2']) {
        const of = rated
          .filter((r) => r.key === key)
          .map((r) => +r.started_at!)
          .sort((a, b) => a - b);
        for (let i = 0; i + 2 < of.length; i++) expect(of[i + 2] - of[i]).toBeGreaterThanOrEqual(2_000);
      }
      // Reset: the queue has no limit again (no options declare one), and claims as any other.
      expect(await engines[0].flowControl.resetQueueLimits('rated')).toBeNull();
      expect(await engines[0].startRun('quick', { n: 99 }).then((r) => r.result({ timeoutMs: 20_000 }))).toBe(99);
    } finally {
      await admin.close();
      for (const e of engines) await e.stop();
    }
  }, 45_000);

  it('keyUsage adds up each key over the partitions; whyNotStarted counts the executing runs of every partition', async () => {
    const gate: Array<() => void> = [];
    const hold = [
      async (input: { tenant: string }) =>
        Durable.step('hold', async () => new Promise<void>((r) => gate.push(r)).then(() => input.tenant)),
      { queue: 'held', concurrencyKey: (i: { tenant: string }) => i.tenant },
    ] as const;
    const engine = await h.engine({ hold: [...hold] }, { queues: { held: { keyConcurrency: 2 } } });
    const handles = await Promise.all(Array.from({ length: 5 }, () => engine.startRun('hold', { tenant: 'acme' })));
    await eventually(async () => gate.length === 2, 20_000, 'two runs of the key executing');
    await sleep(300);
    const keys = await engine.flowControl.keyUsage('held');
    expect(keys).toEqual([expect.objectContaining({ key: 'acme', running: 2, due: 3 })]);
    const waiting = (await runsOf('held')).find((r) => r.status === 'PENDING')!;
    const why = await engine.flowControl.whyNotStarted(waiting.id);
    expect(why).toMatchObject({ keyRunning: 2, keyConcurrency: 2, claimable: false });
    expect(why!.reasons.join(' ')).toMatch(/concurrency key acme: 2\/2/);
    await eventually(
      async () => {
        gate.splice(0).forEach((r) => r());
        return (await Promise.all(handles.map((r) => engine.getRun(r.id)))).every((r) => r?.status === 'SUCCEEDED');
      },
      20_000,
      'every run of the key ends',
    );
    expect((await Promise.all(handles.map((r) => r.result({ timeoutMs: 20_000 })))).every((t) => t === 'acme')).toBe(true);
  }, 40_000);

  it('claims the picked runs of a limited queue with a statement Citus sends whole to the partition (one task, no subplan)', async () => {
    const text = engineStatements().get('durable_claim_picked');
    expect(text).toBeDefined();
    const picked = JSON.stringify([
      { id: 'r1', prev: 'PENDING', next_order: new Date().toISOString(), next_started: new Date().toISOString() },
    ]);
    const rows = await h.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${partitionText(text!, 2)}`, [picked, 'w1', 1000]);
    const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
    expect({ tasks: [...plan.matchAll(/Task Count: (\d+)/g)].map((m) => m[1]), subplans: /Distributed Subplan/.test(plan) }).toEqual({
      tasks: ['1'],
      subplans: false,
    });
  });

  it("records a limited claim's 'claimed' rows at the time it took the runs, however long its transaction waited (test/flow/claim-history-time.spec.ts)", async () => {
    await h.query(`INSERT INTO durable_queue_limits (queue, global_concurrency) VALUES ('waited', 5)`);
    const ids = ['w-a', 'w-b', 'w-c', 'w-d'];
    for (const id of ids) {
      await h.query(
        `INSERT INTO ${partitionSchema(partitionOf(id, PARTITIONS))}.durable_runs (id, workflow_name, queue) VALUES ($1, 'wf', 'waited')`,
        [id],
      );
    }
    const store = createStore(pgSqlClient(h.pool, { prepared: false }), { history: true, layout: { partitions: PARTITIONS } });
    const request = { queue: 'waited', limit: 4, owner: 'late', leaseMs: 60_000, workflows: ['wf'] };
    const { began, released, claimed } = await claimAfterWaiting(store, request, 1_000);
    // A claim asks up to four partitions: at least one of the runs is taken.
    const taken = claimed.runs.map((r) => r.id);
    expect(taken.length).toBeGreaterThan(0);
    for (const id of taken) {
      const [row] = await h.query<{ at: Date }>(
        `SELECT at FROM ${partitionSchema(partitionOf(id, PARTITIONS))}.durable_run_events WHERE run_id = $1 AND kind = 'claimed'`,
        [id],
      );
      expect(row.at.getTime()).toBeGreaterThanOrEqual(released.getTime() - 1);
      expect(row.at.getTime()).toBeGreaterThan(began.getTime() + 900);
    }
  });

  /** Runs of `queue`, one per [key, where]: where A is one partition, B any other. Returns their ids. */
  const placeRuns = async (queue: string, keys: Array<[key: string, where: 'A' | 'B']>) => {
    const ids = Array.from({ length: 400 }, (_, i) => `${queue}-${i}`);
    const a = partitionOf(ids[0], PARTITIONS);
    const free = { A: ids.filter((id) => partitionOf(id, PARTITIONS) === a), B: ids.filter((id) => partitionOf(id, PARTITIONS) !== a) };
    const placed: string[] = [];
    for (const [key, where] of keys) {
      const id = free[where].shift()!;
      await h.query(
        `INSERT INTO ${partitionSchema(partitionOf(id, PARTITIONS))}.durable_runs (id, workflow_name, queue, concurrency_key) VALUES ($1, 'wf', $2, $3)`,
        [id, queue, key],
      );
      placed.push(id);
    }
    return placed;
  };
  const claimFrom = (queue: string, limit: number) =>
    claimLimited(createStore(pgSqlClient(h.pool, { prepared: false }), { history: false, layout: { partitions: PARTITIONS } }), {
      queue,
      limit,
      owner: 'w',
      leaseMs: 60_000,
      workflows: ['wf'],
    });

  it('offers the keys in turn across partitions: a partition asked first does not take a later key of its own before an earlier one elsewhere', async () => {
    await h.query(`INSERT INTO durable_queue_limits (queue, key_concurrency) VALUES ('turns', 1)`);
    // Keys k1 and k3 in one partition, k2 in another: a claim with room for 2 serves k1 and k2.
    const [k1, k2] = await placeRuns('turns', [
      ['k1', 'A'],
      ['k2', 'B'],
      ['k3', 'A'],
    ]);
    expect((await claimFrom('turns', 2)).runs.map((r) => r.id).sort()).toEqual([k1, k2].sort());
    const [{ rr_key }] = await h.query<{ rr_key: string }>(`SELECT rr_key FROM durable_queue_limits WHERE queue = 'turns'`);
    expect(rr_key).toBe('k2');
  });

  it('gives every key its first run before any key its second, across partitions (keyConcurrency 2)', async () => {
    await h.query(`INSERT INTO durable_queue_limits (queue, key_concurrency) VALUES ('rounds', 2)`);
    // Two runs each of k1 and k3 in one partition, one of k2 in another: room for 3 serves k1, k2, k3.
    const ids = await placeRuns('rounds', [
      ['k1', 'A'],
      ['k1', 'A'],
      ['k2', 'B'],
      ['k3', 'A'],
      ['k3', 'A'],
    ]);
    const claimed = (await claimFrom('rounds', 3)).runs.map((r) => r.id);
    const keyOf = new Map(ids.map((id, i) => [id, ['k1', 'k1', 'k2', 'k3', 'k3'][i]]));
    expect(claimed.map((id) => keyOf.get(id)).sort()).toEqual(['k1', 'k2', 'k3']);
  });
  it('does not move the cursor past keys held by partitions the claim did not ask (at most four per claim)', async () => {
    await h.query(`INSERT INTO durable_queue_limits (queue, key_concurrency) VALUES ('spread', 1)`);
    // One key per partition, six partitions: a claim asks four, serves k1..k4 and leaves the cursor at k4.
    const ids = Array.from({ length: 400 }, (_, i) => `spread-${i}`);
    for (let k = 0; k < PARTITIONS; k++) {
      const id = ids.find((x) => partitionOf(x, PARTITIONS) === k)!;
      await h.query(
        `INSERT INTO ${partitionSchema(k)}.durable_runs (id, workflow_name, queue, concurrency_key) VALUES ($1, 'wf', 'spread', $2)`,
        [id, `k${k + 1}`],
      );
    }
    expect((await claimFrom('spread', PARTITIONS)).runs).toHaveLength(4);
    const [{ rr_key }] = await h.query<{ rr_key: string }>(`SELECT rr_key FROM durable_queue_limits WHERE queue = 'spread'`);
    expect(rr_key).toBe('k4');
    // The next claim serves the two keys left.
    expect((await claimFrom('spread', PARTITIONS)).runs).toHaveLength(2);
  });
});
