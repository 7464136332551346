/**
 * Settings of a chaos run: the size of the workload, what the driver does to the workers, and the
 * engine settings the worker processes get (through DURABLE_* environment variables).
 */
/** The child workflow each chaos run starts; it must answer the message its parent sends it. */
export const REPLY_WORKFLOW = 'chaos.reply';
/** The error a run that fails on purpose (input.undo, every undoEvery-th run) ends with, after compensating its steps. */
export const UNDO_ERROR = 'chaos: undo requested';
/** The declared schedule every worker has (every second): each slot must start exactly one run, under the chaos too. */
export const TICK_SCHEDULE = 'chaos.tick';
/** Flow control under the chaos: the workflow of the runs with a concurrency key, and its queue, which has cluster-wide limits. */
export const SLOT_WORKFLOW = 'chaos.slot';
export const SLOT_QUEUE = 'chaos.limited';
/** Rate limit under the chaos: the workflow and its queue, which has a rate limit (rateLimit). */
export const RATED_WORKFLOW = 'chaos.rated';
export const RATED_QUEUE = 'chaos.rated';
/**
 * Singleton and debounce under the chaos: runs of STARTER_WORKFLOW start, from a step (so a worker
 * killed in it starts them again), runs of SINGLE_WORKFLOW with a dedupe key and of BOUNCE_WORKFLOW
 * with a debounce key, several at once per key; all three in KEYS_QUEUE.
 */
export const STARTER_WORKFLOW = 'chaos.starter';
export const SINGLE_WORKFLOW = 'chaos.single';
export const BOUNCE_WORKFLOW = 'chaos.bounce';
export const KEYS_QUEUE = 'chaos.keys';
export interface ChaosSettings {
  /**
   * The database the run is on: the same workload and judge on each (see chaos-db.ts for MariaDB's).
   * 'citus': a Citus coordinator's database in distributed mode (`partitions` partitions), with a shard
   * move as its outage.
   */
  database: 'postgres' | 'mariadb' | 'citus';
  /** Citus: the partitions of the distributed database (schemas durable_p0…). */
  partitions: number;
  /** Every worker declares the every-second schedule TICK_SCHEDULE, and each slot is checked. */
  schedule: boolean;
  /**
   * The workers keep firing the schedule until this many seconds after they were ready, even when
   * every run finished sooner: the number of slots checked does not shrink as the engine gets faster.
   */
  scheduleMinS: number;
  /** Worker processes alive at once (P). */
  workers: number;
  /** Runs started at the beginning (M). */
  runs: number;
  /**
   * Flow control: runs of SLOT_WORKFLOW started with the others, in SLOT_QUEUE (limits: slotLimits),
   * with a concurrency key each (slotKeys keys, in turn). Each holds its slot for a step of stepMs.
   */
  slotRuns: number;
  slotKeys: number;
  slotLimits: { globalConcurrency: number; keyConcurrency: number };
  /** Runs of RATED_WORKFLOW, started with the others; its queue allows rateLimit starts per period. */
  ratedRuns: number;
  rateLimit: { limit: number; periodMs: number };
  /**
   * Runs of STARTER_WORKFLOW: each makes `starterRounds` rounds, a round being 3 starts at once of a
   * singleton run (one of dedupeKeys keys) and 3 of a debounced run (one of debounceKeys keys, period debounceMs).
   */
  starters: number;
  starterRounds: number;
  /** The pause between two rounds (uniform, ms). */
  starterGapMs: [number, number];
  dedupeKeys: number;
  debounceKeys: number;
  debounceMs: number;
  /** A debounced run starts at the latest this long after its first start (maxDelayMs): the starters never pause for a whole period. */
  debounceMaxMs: number;
  /** The driver makes trouble for at most this long (s); the workload then finishes in peace. */
  durationS: number;
  /** Mean seconds between two SIGKILLs (each followed by a replacement); 0 = no kills. */
  killEveryS: number;
  /** At least this many SIGKILLs, spread over the first 35 % of the chaos and made before its outage (on a fast machine the time-based ones may be too few). */
  minKills: number;
  /** Workers frozen (SIGSTOP) past their lease, then continued (SIGCONT). */
  zombies: number;
  /**
   * The database outage, once mid-run: "restart" restarts Postgres (pg_ctlcluster restart: every
   * session on the server is cut), "proxy" cuts only the workers' connections for outageMs (a
   * TCP proxy between them and Postgres: safe while other tests share the server), "none".
   * "shard-move" (Citus): the partition with the most unfinished runs moves to the other worker
   * node (citus_move_shard_placement) while its runs are in flight.
   */
  outage: 'restart' | 'proxy' | 'failover' | 'shard-move' | 'none';
  /**
   * "failover": the run gets its own primary and streaming standby (test/support/pg-cluster.ts); the
   * outage SIGKILLs the primary's postmaster and promotes the standby promoteAfterMs later.
   * Replication sync (nothing committed may be lost) or async (what was lost is reported).
   */
  replication: 'sync' | 'async';
  promoteAfterMs: number;
  /** Length of a "proxy" outage. */
  outageMs: number;
  /** Runs executed at once per worker. */
  concurrency: number;
  leaseMs: number;
  heartbeatMs: number;
  pollMs: number;
  sweepMs: number;
  /** Durable sleeps up to this long stay in memory; longer ones suspend the run. */
  inMemoryWaitMs: number;
  /** Every this many-th run fails on purpose at its end, after compensating its steps; 0 = none. */
  undoEvery: number;
  /** Duration of each plain/ledger step (uniform, ms). */
  stepMs: [number, number];
  /** Duration of the durable sleep of each run (uniform, ms). */
  sleepMs: [number, number];
  /** How long a zombie stays frozen (ms); must exceed the lease. */
  zombieStopMs: number;
  /** After the chaos, how long the runs may take to finish (s). */
  settleTimeoutS: number;
  /** false: timing checks (stuck runs, recovery) are reported but are not violations (CI on a loaded machine). */
  strictTimings: boolean;
  /** Seed of the workload's random numbers and of the driver's choices. */
  seed: number;
  /** Progress line every this many ms; 0 = quiet. */
  progressMs: number;
}

export function chaosSettings(o: Partial<ChaosSettings> = {}): ChaosSettings {
  // Distributed mode refuses flow control, rate limits, singleton and debounce starts for now.
  const citus = o.database === 'citus';
  // On Citus every statement goes through the coordinator to a worker node: with 3 PostgreSQL servers
  // on one machine, a heartbeat can take seconds; a longer lease keeps live workers' leases.
  const leaseMs = o.leaseMs ?? (citus ? 5_000 : 3_000);
  const sweepMs = o.sweepMs ?? 500;
  const runs = o.runs ?? 2_000;
  const flowRuns = o.slotRuns ?? Math.round(runs / 10);
  const s: ChaosSettings = {
    database: 'postgres',
    partitions: 6,
    schedule: true,
    scheduleMinS: 0,
    workers: 3,
    runs,
    slotRuns: flowRuns,
    slotKeys: 8,
    slotLimits: { globalConcurrency: 6, keyConcurrency: 2 },
    ratedRuns: flowRuns,
    rateLimit: { limit: 10, periodMs: 2_000 },
    starters: Math.ceil(flowRuns / 5),
    starterRounds: 20,
    starterGapMs: [100, 600],
    dedupeKeys: 4,
    debounceKeys: 4,
    debounceMs: 400,
    debounceMaxMs: 1_500,
    durationS: 60,
    killEveryS: 4,
    minKills: 0,
    zombies: 1,
    outage: citus ? 'shard-move' : 'restart',
    outageMs: 3_000,
    replication: 'sync',
    promoteAfterMs: 1_000,
    // On Citus, 10 runs at once per worker starve the heartbeats of CPU (see leaseMs).
    concurrency: citus ? 5 : 10,
    leaseMs,
    heartbeatMs: Math.round(leaseMs / 5),
    pollMs: 250,
    sweepMs,
    inMemoryWaitMs: 250,
    undoEvery: 5,
    stepMs: [5, 60],
    sleepMs: [50, 400],
    zombieStopMs: leaseMs + 4 * sweepMs + 1_000,
    settleTimeoutS: 120 + Math.ceil(runs / 20),
    strictTimings: true,
    seed: 42,
    progressMs: 2_000,
    ...Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)),
  };
  const bad: string[] = [];
  if (!(s.workers >= 1)) bad.push('workers must be ≥ 1');
  if (s.zombies > 0 && s.workers < 2) bad.push('a zombie needs at least 2 workers (someone must take its runs over)');
  if (!(s.runs >= 1)) bad.push('runs must be ≥ 1');
  if (s.zombieStopMs <= s.leaseMs) bad.push('zombieStopMs must exceed leaseMs (a zombie is frozen past its lease)');
  if (s.heartbeatMs >= s.leaseMs) bad.push('heartbeatMs must be below leaseMs');
  if (!['restart', 'proxy', 'failover', 'shard-move', 'none'].includes(s.outage))
    bad.push('outage must be restart, proxy, failover, shard-move or none');
  if (!['sync', 'async'].includes(s.replication)) bad.push('replication must be sync or async');
  if (s.database === 'mariadb' && s.outage === 'failover') bad.push('the failover outage needs Postgres');
  if ((s.database === 'citus') !== (s.outage === 'shard-move') && s.outage !== 'none')
    bad.push('on Citus the outage is a shard move (shard-move) or none, and a shard move needs Citus');
  if (s.database === 'citus') {
    if (!(s.partitions >= 2)) bad.push('a shard move needs at least 2 partitions');
  }
  if (bad.length) throw new Error(`chaos settings: ${bad.join('; ')}`);
  return s;
}

/** Connection pools of one worker process: the engine's own, and the app's Prisma pool. */
export interface WorkerPools {
  engine: number;
  prisma: number;
}

/**
 * Pools that let `workers` processes (and a replacement booting next to them) fit in the
 * connections the server has free: each process also holds one LISTEN session. Fewer Prisma
 * connections than runs at once only make steps wait for one. Throws when even small pools do
 * not fit, saying what to change.
 */
export function poolsFor(s: ChaosSettings, freeConnections: number, maxConnections: number): WorkerPools {
  const spare = 8; // the driver's pool, its sampler, the proxy, psql
  const perWorker = Math.floor((freeConnections - spare) / (s.workers + 1));
  if (perWorker < 5) {
    throw new Error(
      `chaos: ${s.workers} workers need at least 5 connections each, and the server has ${freeConnections} free ` +
        `(max_connections ${maxConnections}): use fewer workers (-P) or raise max_connections.`,
    );
  }
  const engine = Math.max(2, Math.min(10, Math.floor(perWorker / 3)));
  return { engine, prisma: Math.max(2, Math.min(s.concurrency + 2, perWorker - engine - 1)) };
}

/** Environment of a worker process (read by chaos-app.ts). */
export function workerEnv(s: ChaosSettings, pools?: WorkerPools): Record<string, string> {
  return {
    ...(pools ? { DURABLE_POOL_SIZE: String(pools.engine), DURABLE_PRISMA_POOL: String(pools.prisma) } : {}),
    NO_COLOR: '1',
    DURABLE_CHAOS_SCHEDULE: s.schedule ? '1' : '0',
    DURABLE_CONCURRENCY: String(s.concurrency),
    DURABLE_LEASE_MS: String(s.leaseMs),
    DURABLE_HEARTBEAT_MS: String(s.heartbeatMs),
    DURABLE_POLL_MS: String(s.pollMs),
    DURABLE_SWEEP_MS: String(s.sweepMs),
    DURABLE_IN_MEMORY_WAIT_MS: String(s.inMemoryWaitMs),
  };
}

/**
 * Every top-level run of the workload whose number is known at the start: the chaos runs and the
 * flow-control runs (children, schedule runs, and the singleton and debounced runs the starters make aside).
 */
export const workloadRuns = (s: ChaosSettings) => s.runs + s.slotRuns + s.ratedRuns + s.starters;
/** The workflows counted in workloadRuns. */
export const WORKLOAD_WORKFLOWS = ['chaos', SLOT_WORKFLOW, RATED_WORKFLOW, STARTER_WORKFLOW];

/** Runs that fail on purpose and compensate (every undoEvery-th, by index). */
export const undoRuns = (s: ChaosSettings) => (s.undoEvery > 0 ? Math.floor(s.runs / s.undoEvery) : 0);
export const isUndoRun = (s: ChaosSettings, i: number) => s.undoEvery > 0 && i % s.undoEvery === s.undoEvery - 1;

export const between = (r: () => number, [lo, hi]: [number, number]) => Math.round(lo + r() * (hi - lo));
