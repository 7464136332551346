import { setTimeout as delay } from 'node:timers/promises';
import { DurableEngine, WorkflowRegistry } from 'nestjs-durable';
import type { ChaosInput, StarterInput } from './chaos-app.js';
import { rng } from '../support/rng.js';
import {
  between,
  isUndoRun,
  KEYS_QUEUE,
  poolsFor,
  RATED_QUEUE,
  RATED_WORKFLOW,
  SLOT_QUEUE,
  SLOT_WORKFLOW,
  STARTER_WORKFLOW,
  TICK_SCHEDULE,
  workerEnv,
  WORKLOAD_WORKFLOWS,
  workloadRuns,
  type ChaosSettings,
} from './chaos-config.js';
import { keyDuplicates, loadKeyFacts, type KeyDuplicate } from './chaos-keys.js';
import { ChaosDriver, type Progress } from './chaos-driver.js';
import { chaosDb, type ChaosDb } from './chaos-db.js';
import { loadFacts } from './chaos-facts.js';
import { loadSlotFacts } from './chaos-slots.js';
import { Fleet } from './chaos-fleet.js';
import { buildReport, type ChaosReport } from './chaos-report.js';
import { TcpProxy } from './tcp-proxy.js';
import type { FailoverOutage } from './chaos-failover.js';
import type { ShardMoveOutage } from './chaos-citus.js';

/**
 * One chaos run against the database at `url` (migrated, with the test tables): starts the
 * workers and the runs, lets the driver loose, waits for every run to finish, stops the workers
 * and reports what the database says.
 */
export async function runChaos(
  s: ChaosSettings,
  url: string,
  log: (line: string) => void = console.log,
  /** With s.outage 'failover': the primary + standby the url names, and what to do to them. */
  failover?: FailoverOutage,
  /** With s.outage 'shard-move' (Citus): the cluster the url names, and the partition move (chaos-citus.ts). */
  shardMove?: ShardMoveOutage,
): Promise<ChaosReport> {
  if ((s.outage === 'shard-move') !== !!shardMove) throw new Error('a shard-move outage needs its ShardMoveOutage (and only it)');
  const db = chaosDb(url, s.database === 'citus' ? s.partitions : null);
  const proxy = s.outage === 'proxy' ? await TcpProxy.start(url) : null;
  const pools = poolsFor(s, ...(await db.connections()));
  log(`pools per worker: engine ${pools.engine} + LISTEN 1 + Prisma ${pools.prisma} connections (sized to the server's free connections)`);
  const fleet = new Fleet(proxy ? proxy.url(url) : url, workerEnv(s, pools), log);
  const t0 = Date.now();
  const stamp = (line: string) => log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${line}`);
  let progress: Progress = { finished: 0, leased: new Map() };
  let statuses: Record<string, number> = {};
  const duplicatesSeen: KeyDuplicate[] = [];
  let sampling = true;
  let driver = null as ChaosDriver | null;
  try {
    await Promise.all(Array.from({ length: s.workers }, () => fleet.spawn()));
    const readyAt = Date.now();
    stamp(`${s.workers} workers ready: ${fleet.all.map((w) => w.pid).join(', ')}`);
    await startRuns(s, url);
    stamp(
      `${s.runs} runs started${s.slotRuns ? `, and ${s.slotRuns} with a concurrency key in the limited queue ${SLOT_QUEUE}` : ''}` +
        (s.ratedRuns ? `, ${s.ratedRuns} in the rate-limited queue ${RATED_QUEUE}` : '') +
        (s.starters ? `, ${s.starters} that start singleton and debounced runs` : ''),
    );

    // Sampling (progress for the driver and the console); tolerates the database being away.
    const sampler = (async () => {
      let lastPrint = 0;
      while (sampling) {
        try {
          // Children (chaos.reply) are counted in the statuses; "finished" counts the chaos runs, which end after their child, and the flow-control runs.
          const rows = await db.sample(WORKLOAD_WORKFLOWS);
          const leased = new Map<string, number>();
          statuses = {};
          let finished = 0;
          for (const r of rows) {
            statuses[r.status] = (statuses[r.status] ?? 0) + r.n;
            if (r.top && ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(r.status)) finished += r.n;
            if (r.lease_owner && r.status === 'RUNNING') leased.set(r.lease_owner, (leased.get(r.lease_owner) ?? 0) + r.n);
          }
          progress = { finished, leased };
          if (s.starters && db.pg) {
            const at = Date.now();
            for (const d of (await db.pg.query(keyDuplicates(db.tables))).rows as KeyDuplicate[]) duplicatesSeen.push({ ...d, at });
          }
        } catch {
          statuses = { ...statuses, '(database unavailable)': 0 };
        }
        if (s.progressMs && Date.now() - lastPrint >= s.progressMs) {
          lastPrint = Date.now();
          const st = Object.entries(statuses)
            .map(([k, v]) => `${k} ${v}`)
            .join(' · ');
          const frozen = fleet.all.filter((w) => w.state === 'frozen').length;
          stamp(
            `${progress.finished}/${workloadRuns(s)} finished | ${st} | workers ${fleet.running().length}${frozen ? ` (+${frozen} frozen)` : ''}` +
              (driver
                ? ` | kills ${driver.count('kill')} zombies ${driver.count('freeze')} pg-restarts ${driver.count('pg-restart')}`
                : ''),
          );
        }
        await delay(250);
      }
    })();

    const outage = async () => {
      if (proxy) await proxy.outage(s.outageMs);
      else if (failover) await failover.run();
      else if (shardMove) await shardMove.run();
      else await db.restart();
      await waitForDatabase(db);
    };
    driver = new ChaosDriver(fleet, s, () => progress, outage, stamp);
    await driver.run();
    driver.thawAll();
    const chaosEndedAt = Date.now();
    stamp('chaos over; waiting for every run to finish');
    const deadline = Date.now() + s.settleTimeoutS * 1000;
    while (progress.finished < workloadRuns(s) && Date.now() < deadline) {
      await driver.maintain();
      await delay(250);
    }
    // Before the schedule is paused to settle.
    const scheduleLeft = s.schedule ? readyAt + s.scheduleMinS * 1000 - Date.now() : 0;
    if (scheduleLeft > 0) {
      stamp(`the schedule fires on for ${(scheduleLeft / 1000).toFixed(1)} s (scheduleMinS ${s.scheduleMinS})`);
      await delay(scheduleLeft);
    }
    await settleScheduleAndKeys(db, s, driver);
    const settled = progress.finished >= workloadRuns(s);
    const settledAt = Date.now();
    // Late writes (a zombie that woke up just now) land before the books are checked.
    await delay(s.leaseMs + 1_000);
    sampling = false;
    await sampler;
    stamp(settled ? 'all runs finished; stopping the workers (SIGTERM)' : `NOT all runs finished within ${s.settleTimeoutS} s`);
    const stopFailures = await fleet.stopAll();
    const judge = await db.judge();
    const facts = await loadFacts(judge, db.tables);
    const slots = await loadSlotFacts(judge, db.tables);
    const keys = await loadKeyFacts(judge, s, duplicatesSeen, db.tables);
    return buildReport({
      settings: s,
      events: driver.events,
      fleet,
      facts,
      slots,
      keys,
      startedAt: t0,
      chaosEndedAt,
      settled,
      settledAt,
      stopFailures,
      failover: (await failover?.result()) ?? undefined,
      shardMove: shardMove?.result(),
    });
  } finally {
    sampling = false;
    driver?.stop();
    driver?.thawAll();
    fleet.killAll();
    await db.close();
    await proxy?.close();
  }
}

/**
 * Starts the workload: `runs` runs of "chaos" with seeded random step durations, 500 per statement,
 * `slotRuns` runs of SLOT_WORKFLOW in SLOT_QUEUE and `ratedRuns` of RATED_WORKFLOW in RATED_QUEUE, whose
 * limits it sets first, and `starters` runs of STARTER_WORKFLOW.
 */
async function startRuns(s: ChaosSettings, url: string): Promise<void> {
  const registry = new WorkflowRegistry();
  registry.register({ name: 'chaos', queue: 'default', options: {}, run: async () => undefined });
  registry.register({ name: SLOT_WORKFLOW, queue: SLOT_QUEUE, options: {}, run: async () => undefined });
  registry.register({ name: RATED_WORKFLOW, queue: RATED_QUEUE, options: {}, run: async () => undefined });
  registry.register({ name: STARTER_WORKFLOW, queue: KEYS_QUEUE, options: {}, run: async () => undefined });
  const client = new DurableEngine({ registry, connection: url, poolSize: 2, options: { worker: false } });
  await client.start();
  try {
    const r = rng(s.seed);
    if (s.slotRuns) {
      await client.flowControl.setQueueLimits(SLOT_QUEUE, s.slotLimits);
      const slots = Array.from({ length: s.slotRuns }, (_, i) => ({
        workflow: SLOT_WORKFLOW,
        input: { ms: between(r, s.stepMs) * 2 },
        options: { id: `slot-${String(i).padStart(6, '0')}`, queue: SLOT_QUEUE, concurrencyKey: `key-${i % s.slotKeys}` },
      }));
      for (let i = 0; i < slots.length; i += 500) await client.startMany(slots.slice(i, i + 500));
    }
    if (s.ratedRuns) {
      await client.flowControl.setQueueLimits(RATED_QUEUE, { rateLimit: s.rateLimit });
      const rated = Array.from({ length: s.ratedRuns }, (_, i) => ({
        workflow: RATED_WORKFLOW,
        input: { ms: between(r, s.stepMs) },
        options: { id: `rated-${String(i).padStart(6, '0')}`, queue: RATED_QUEUE },
      }));
      for (let i = 0; i < rated.length; i += 500) await client.startMany(rated.slice(i, i + 500));
    }
    if (s.starters) {
      const starters = Array.from({ length: s.starters }, (_, i) => {
        const input: StarterInput = {
          index: i,
          rounds: s.starterRounds,
          gapMs: Array.from({ length: s.starterRounds }, () => between(r, s.starterGapMs)),
          dedupeKeys: s.dedupeKeys,
          debounceKeys: s.debounceKeys,
          debounceMs: s.debounceMs,
          debounceMaxMs: s.debounceMaxMs,
          holdMs: between(r, s.stepMs) * 3,
        };
        return { workflow: STARTER_WORKFLOW, input, options: { id: `starter-${String(i).padStart(6, '0')}`, queue: KEYS_QUEUE } };
      });
      await client.startMany(starters);
    }
    for (let i = 0; i < s.runs; i += 500) {
      const batch = Array.from({ length: Math.min(500, s.runs - i) }, (_, k) => {
        const input: ChaosInput = {
          stepMs: [between(r, s.stepMs), between(r, s.stepMs), between(r, s.stepMs), between(r, s.stepMs)],
          sleepMs: between(r, s.sleepMs),
          ...(isUndoRun(s, i + k) ? { undo: true } : {}),
        };
        return { workflow: 'chaos', input, options: { id: `chaos-${String(i + k).padStart(6, '0')}` } };
      });
      await client.startMany(batch);
    }
  } finally {
    await client.stop();
  }
}

async function waitForDatabase(db: ChaosDb): Promise<void> {
  for (;;) {
    try {
      await db.ping();
      return;
    } catch {
      await delay(100);
    }
  }
}

/**
 * The parts of the workload judged run by run, after the chaos: the schedule stops firing and its
 * last runs finish (they are checked slot by slot); the singleton and debounced runs the starters
 * made finish too (checked one by one).
 */
async function settleScheduleAndKeys(db: ChaosDb, s: ChaosSettings, driver: ChaosDriver): Promise<void> {
  if (s.schedule) await db.pauseSchedule(TICK_SCHEDULE).catch(() => undefined);
  for (const [column, value, wanted] of [
    ['schedule_id', TICK_SCHEDULE, s.schedule],
    ['queue', KEYS_QUEUE, s.starters > 0],
  ] as const) {
    for (const until = Date.now() + 30_000; wanted && Date.now() < until; await delay(250)) {
      if ((await db.openRuns(column, value).catch(() => 1)) === 0) break;
      await driver.maintain();
    }
  }
}
