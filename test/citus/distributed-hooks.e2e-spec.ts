import { Durable, InvalidArgumentError } from 'nestjs-durable';
import type { DurableEngine, DurableLifecycleEvent } from 'nestjs-durable';
import { AdminService } from '../../libs/durable/src/admin/admin-service.js';
import { partitionOf, partitionSchema } from '../../libs/durable/src/store/partitions.js';
import { CitusCluster, describeCitus } from '../support/citus-cluster.js';
import { EngineHarness, eventually, sleep } from '../support/engine-harness.js';

const PARTITIONS = 6;
/**
 * A partition's hook lease is renewed when the consumer reads it, once per round over every
 * partition: 15 s, so a slow round on a loaded machine does not hand a partition over (and deliver
 * again, at least once, as documented); 2 s where a stopped engine's partitions must pass over.
 * settleMs is the default (1 s): a history row commits on a worker node through the coordinator's
 * two-phase commit, which a loaded machine can stretch past a shorter window, and a row that commits
 * after the cursor passed its id is never delivered.
 */
const HOOKS = { pollIntervalMs: 50, settleMs: 1_000, leaseMs: 15_000 };
const HANDOVER_HOOKS = { ...HOOKS, leaseMs: 2_000 };
const KINDS = ['run.succeeded', 'step.retried'] as const;

interface Seen {
  engine: string;
  event: DurableLifecycleEvent;
}

/** Lifecycle hooks in distributed mode on a real Citus cluster: a cursor and a lease per (consumer, partition). */
describeCitus('distributed mode on Citus: lifecycle hooks', () => {
  let cluster: CitusCluster;
  let h: EngineHarness;
  const tries = new Map<string, number>();
  const workflows = {
    // two failed attempts, then success: step.retried, step.retried, run.succeeded (a run executed again after its
    // lease expired on a busy machine retries again: its history has what happened, and hooks keep its order)
    flaky: async () =>
      Durable.step(
        'work',
        async () => {
          const id = Durable.runId();
          const n = (tries.get(id) ?? 0) + 1;
          tries.set(id, n);
          if (n < 3) throw new Error(`attempt ${n} fails`);
          return n;
        },
        { retries: { maxAttempts: 3, initialDelayMs: 400, backoffFactor: 1 } },
      ),
  };

  /** An engine with `consumer` registered, recording what it receives in `seen` (its handler takes `ms`). */
  const hooked = async (consumer: string, seen: Seen[], ms = 0, hooks = HOOKS): Promise<DurableEngine> => {
    const e = await h.engine(workflows, { hooks }, false);
    e.onEvent(
      [...KINDS],
      async (event) => {
        if (ms) await sleep(ms);
        seen.push({ engine: e.options.workerId, event });
      },
      { consumer },
    );
    return e;
  };

  /** The history ids of the events each of `runs` must give: run id → ids. */
  const expected = async (runs: string[]): Promise<Map<string, string[]>> => {
    const out = new Map<string, string[]>();
    for (const id of runs) {
      const rows = await h.query<{ id: string }>(
        `SELECT e.id::text AS id FROM ${partitionSchema(partitionOf(id, PARTITIONS))}.durable_run_events e
         WHERE e.run_id = $1 AND e.kind IN ('completed', 'step_retried') ORDER BY e.id`,
        [id],
      );
      out.set(
        id,
        rows.map((r) => r.id),
      );
    }
    return out;
  };

  /**
   * Every run's events were all received, and in the order they happened (first delivery of each): the
   * order of its history rows, its retries (attempts 1 and 2, once each unless the run was executed again),
   * then its success.
   */
  const inRunOrder = (seen: Seen[], want: Map<string, string[]>) => {
    for (const [run, ids] of want) {
      const first = new Map<string, DurableLifecycleEvent>();
      for (const s of seen) if (s.event.runId === run && !first.has(s.event.id)) first.set(s.event.id, s.event);
      expect({ run, order: [...first.keys()] }).toEqual({ run, order: ids });
      const got = [...first.values()].map((e) => (e.type === 'step.retried' ? `retried ${String(e.detail?.attempt)}` : e.type));
      expect({ run, last: got.at(-1), retried: got.slice(0, -1).every((g) => g.startsWith('retried ')) }).toEqual({
        run,
        last: 'run.succeeded',
        retried: true,
      });
    }
  };

  const startRuns = async (e: DurableEngine, n: number): Promise<string[]> => {
    const runs = await Promise.all(Array.from({ length: n }, () => e.startRun('flaky', {})));
    for (const r of runs) await r.result({ timeoutMs: 60_000 });
    return runs.map((r) => r.id);
  };

  beforeAll(async () => {
    cluster = await CitusCluster.start();
    h = EngineHarness.on(await cluster.database('durable_citus_hooks', PARTITIONS));
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await cluster?.stop();
  });

  it('delivers every event of its kinds once in total from two engines, each run in order, over the partitions', async () => {
    const seen: Seen[] = [];
    const a = await hooked('audit', seen);
    const b = await hooked('audit', seen);
    await Promise.all([a.start(), b.start()]);
    const runs = await startRuns(a, 24);
    expect(new Set(runs.map((id) => partitionOf(id, PARTITIONS))).size).toBeGreaterThanOrEqual(4);
    const want = await expected(runs);
    const total = [...want.values()].reduce((n, ids) => n + ids.length, 0);
    expect(total).toBe(24 * 3);
    await eventually(async () => seen.length >= total, 30_000, 'every event');
    await sleep(500); // nothing more comes
    expect(seen.length).toBe(total);
    expect(new Set(seen.map((s) => `${s.event.runId}/${s.event.id}`)).size).toBe(total);
    inRunOrder(seen, want);
    for (const s of seen) expect(s.event.workflowName).toBe('flaky');
    // a cursor row (with the lease) per partition, and a row per other stream (node) that numbered its rows
    const rows = (
      await h.query<{ consumer: string }>(`SELECT consumer FROM durable_hook_cursors WHERE consumer LIKE 'audit%' ORDER BY consumer`)
    ).map((r) => r.consumer);
    expect(rows.filter((r) => r.split('\u001F').length === 2)).toEqual(Array.from({ length: PARTITIONS }, (_, k) => `audit\u001Fp${k}`));
    for (const r of rows) expect(r.replaceAll('\u001F', '|')).toMatch(/^audit\|p\d(\|g\d+)?$/);
  }, 120_000);

  it('delivers at least once, in order, when one of the two engines stops midway: the other takes its partitions', async () => {
    const seen: Seen[] = [];
    const a = await hooked('stopping', seen, 100, HANDOVER_HOOKS);
    await a.start(); // takes every partition's lease first
    const b = await hooked('stopping', seen, 100, HANDOVER_HOOKS);
    await b.start();
    const runs = (await Promise.all(Array.from({ length: 24 }, () => a.startRun('flaky', {})))).map((r) => r.id);
    await eventually(async () => seen.length >= 10, 30_000, 'the first events');
    await a.stop();
    const fromA = seen.length;
    for (const id of runs) await b.handle(id).result({ timeoutMs: 60_000 });
    const want = await expected(runs);
    const total = [...want.values()].reduce((n, ids) => n + ids.length, 0);
    await eventually(async () => new Set(seen.map((s) => `${s.event.runId}/${s.event.id}`)).size >= total, 60_000, 'every event');
    expect(fromA).toBeLessThan(total);
    expect(seen.some((s) => s.engine === b.options.workerId)).toBe(true);
    inRunOrder(seen, want);
  }, 120_000);

  it('starts a new consumer at the newest event of each partition, and shows one entry per consumer in the admin view', async () => {
    const seen: Seen[] = [];
    const first = await hooked('fresh', []);
    await first.start();
    const before = await startRuns(first, 12);
    const late = await hooked('late', seen);
    await late.start();
    for (let k = 0; k < PARTITIONS; k++) {
      const [row] = await h.query<{ cursor: string; newest: string }>(
        `SELECT c.last_event_id::text AS cursor, (SELECT coalesce(max(id), 0)::text FROM ${partitionSchema(k)}.durable_run_events) AS newest
         FROM durable_hook_cursors c WHERE c.consumer = $1`,
        [`late\u001Fp${k}`],
      );
      expect(BigInt(row.cursor)).toBeGreaterThanOrEqual(0n);
      expect(BigInt(row.cursor)).toBeLessThanOrEqual(BigInt(row.newest));
    }
    const after = await startRuns(late, 12);
    const want = await expected(after);
    await eventually(async () => seen.length >= 36, 30_000, 'the new runs’ events');
    await sleep(300);
    expect(seen.filter((s) => before.includes(s.event.runId))).toEqual([]);
    expect(seen.length).toBe(36);
    inRunOrder(seen, want);

    const admin = new AdminService(() => late);
    try {
      await eventually(
        async () => (await late.hookCursors()).every((c) => c.consumer !== 'late' || c.behind === 0),
        10_000,
        'the late consumer caught up',
      );
      const { consumers } = await admin.insights.hooks();
      expect(consumers.map((c) => c.consumer)).toEqual(['audit', 'fresh', 'late', 'stopping']);
      const entry = consumers.find((c) => c.consumer === 'late')!;
      expect(entry.lastEventId).toMatch(new RegExp(`^${Array.from({ length: PARTITIONS }, (_, k) => `p${k}:\\d+(/\\d+)*`).join(' ')}$`));
      expect(entry.owner).toBe(late.options.workerId);
      expect(entry.behind).toBe(0);
      expect(Date.parse(entry.leaseExpiresAt!)).toBeGreaterThan(Date.now() - 1_000);
    } finally {
      await admin.close();
    }
  }, 120_000);

  it('refuses a consumer name with a control character in distributed mode (its cursor rows could collide)', async () => {
    const e = await h.engine(workflows, { hooks: HOOKS }, false);
    e.onEvent('run.failed', () => {}, { consumer: 'a\u001Fp1' });
    await expect(e.start()).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
