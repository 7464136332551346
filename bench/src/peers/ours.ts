/**
 * nestjs-durable ("ours") running the benchmark workload: N workflows x k trivial steps, the
 * same phases and figure definitions as peers/dbos.ts (see figures.ts), on a freshly recreated
 * database with the schema an app's migrations create.
 *
 * Workers: `processes` = 1 runs the worker engine in this process; P > 1 forks P worker
 * processes (ours-child.ts) that share the queue, and this process only enqueues (an engine
 * with worker: false).
 *
 *   A. warm-up, then the idle probe: 50 runs started one after another from ANOTHER process
 *      (a forked enqueuer with worker: false), so each start goes INSERT + pg_notify -> LISTEN ->
 *      claim. enqueue->start from created_at / started_at.
 *   B. end to end: one caller enqueues N one by one (startRun, awaited) while the workers run.
 *      With processes = 1 the caller is the worker process, so a start finding a free slot
 *      takes the in-process fast path (inserted already claimed, executed at once); the notes
 *      give the share. CPU, commits, rows, statements and latencies come from this phase.
 *   C. enqueue rates with no worker anywhere (startRun one by one, startMany in batches), into
 *      a queue nobody serves (deleted afterwards); then saturation: startMany N, start the
 *      workers, drain. workflows/s = N / (first started_at -> last finished_at).
 * Timestamps are durable_runs.created_at / started_at / finished_at (database clock, ms).
 */
import { databaseName, readDbStats, recreateDatabase, withClient, type DbStats } from '../db.js';
import { peerPoolSize, type PeerFigures, type RunOpts } from '../figures.js';
import { pgCpuDelta, snapshotPgCpu, type PgCpuSnapshot } from '../pg-cpu.js';
import type { ProfileSummary } from '../profile.js';
import { guardStall, statusSummary, type StatusSource } from '../stall.js';
import { p50p90p99, percentiles } from '../stats.js';
import type { Snap } from './ours-child.js';
import {
  OursHost,
  QUEUE,
  UNSERVED_QUEUE,
  WORKFLOW,
  addCounts,
  createSchema,
  diffCounts,
  SQL,
  type HostConfig,
  type StatementCounts,
} from './ours-lib.js';
import { Child, startWorkers, type WorkerSet } from './ours-workers.js';

export interface OursOpts extends RunOpts {
  /** Flow control: a durable_queue_limits row on the bench queue, so every claim takes the limited path. */
  limits?: { globalConcurrency: number; keyConcurrency: number | null };
  /** Worker processes (1 = in this process). */
  workers: number;
  idleRuns?: number;
  /** Engine option history (default true, the engine's default). */
  history?: boolean;
  /** Engine option pollIntervalMs (default: the engine's, 1000 ms). */
  pollIntervalMs?: number;
  /** Experiment: the engine's statements as named prepared statements (see HostConfig.prepared). */
  prepared?: boolean;
  /** Runs for the startMany rate (at least `workflows`). */
  bulkRuns?: number;
  /** Write a CPU profile of the worker process(es) for the end-to-end and drain phases here. */
  cpuProfDir?: string;
  log?: (msg: string) => void;
}

/** Per-phase cost breakdown (what PeerFigures has no room for). */
export interface PhaseCost {
  workflows: number;
  wallS: number;
  /** Engine statements per workflow, by name (store/sql.ts export names), all processes. */
  statementsPerWorkflow: Record<string, number>;
  statementsPerWorkflowTotal: number;
  /** INSERTs the steps made (--db-write) per workflow. */
  userWritesPerWorkflow: number;
  commitsPerWorkflow: number;
  rowsWrittenPerWorkflow: number;
  cpuMsPerWorkflow: { node: number; postgres: number; total: number };
  profiles?: ProfileSummary[];
}

export interface OursDetail {
  config: Record<string, unknown>;
  endToEnd: PhaseCost & { fastPathShare: number };
  drain: PhaseCost;
  enqueue: { oneByOnePerSec: number; bulkPerSec: number; bulkRuns: number; bulkBatch: number };
}

export interface OursResult {
  figures: PeerFigures;
  detail: OursDetail;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const BULK_BATCH = 1000;

// ---- helpers ---------------------------------------------------------------------------------

interface Timing {
  created: number;
  started: number;
  finished: number;
  status: string;
}

async function readTimings(url: string, prefix: string): Promise<Timing[]> {
  return withClient(url, async (c) => {
    const { rows } = await c.query(
      `SELECT status, extract(epoch FROM created_at) * 1000 AS c, extract(epoch FROM started_at) * 1000 AS s,
              extract(epoch FROM finished_at) * 1000 AS f
         FROM durable_runs WHERE id LIKE $1`,
      [`${prefix}%`],
    );
    return rows.map((r) => ({ status: r.status, created: Number(r.c), started: Number(r.s), finished: Number(r.f) }));
  });
}

function checkTimings(name: string, rows: Timing[], n: number, notes: string[]): void {
  const bad = rows.filter((t) => t.status !== 'SUCCEEDED').length;
  if (rows.length !== n || bad > 0) notes.push(`WARNING: ${name}: ${rows.length} rows, ${bad} not SUCCEEDED`);
}

const cpuMsNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const items = (prefix: string, from: number, to: number, payload: string, queue?: string) =>
  Array.from({ length: to - from }, (_, i) => ({
    workflow: WORKFLOW,
    input: payload,
    options: { id: `${prefix}${from + i}`, ...(queue ? { queue } : {}) },
  }));

/** startMany in batches of BULK_BATCH; returns the wall time in ms. */
async function enqueueBulk(host: OursHost, prefix: string, n: number, payload: string, queue?: string): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i += BULK_BATCH) await host.engine.startMany(items(prefix, i, Math.min(n, i + BULK_BATCH), payload, queue));
  return performance.now() - t0;
}

/** A measured window: CPU of this process, of the worker processes and of Postgres; engine statements. */
class Window {
  private nodeMs0 = 0;
  private pg0: PgCpuSnapshot = new Map();
  private snap0: Snap = { cpuMs: 0, counts: {}, userWrites: 0 };
  private client0: StatementCounts = {};
  private t0 = 0;
  constructor(
    private readonly ws: WorkerSet,
    private readonly client?: OursHost,
  ) {}
  async begin(): Promise<void> {
    this.snap0 = await this.ws.snap();
    this.client0 = { ...(this.client?.counts ?? {}) };
    this.nodeMs0 = cpuMsNow();
    this.pg0 = snapshotPgCpu();
    this.t0 = performance.now();
  }
  /** Call before stopping anything (an exited backend loses its CPU figure). */
  async end(dbName: string, n: number) {
    const wallS = (performance.now() - this.t0) / 1000;
    const nodeSelf = cpuMsNow() - this.nodeMs0;
    const pg1 = snapshotPgCpu();
    const snap1 = await this.ws.snap();
    const pgc = pgCpuDelta(this.pg0, pg1, dbName);
    const counts = diffCounts(snap1.counts, this.snap0.counts);
    if (this.client) addCounts(counts, diffCounts(this.client.counts, this.client0));
    const nodeMs = nodeSelf + snap1.cpuMs - this.snap0.cpuMs;
    const pgMs = pgc.dbMs + pgc.auxMs;
    const perWf: Record<string, number> = {};
    for (const [k, v] of Object.entries(counts).sort((a, b) => b[1] - a[1])) perWf[k] = v / n;
    return {
      wallS,
      statementsPerWorkflow: perWf,
      statementsPerWorkflowTotal: Object.values(counts).reduce((a, b) => a + b, 0) / n,
      userWritesPerWorkflow: (snap1.userWrites - this.snap0.userWrites) / n,
      cpuMsPerWorkflow: { node: nodeMs / n, postgres: pgMs / n, total: (nodeMs + pgMs) / n },
      pgOtherMs: pgc.otherMs,
      pgDbMs: pgc.dbMs,
      pgAuxMs: pgc.auxMs,
    };
  }
}

const dbDelta = (a: DbStats, b: DbStats, n: number) => ({
  commitsPerWorkflow: (b.xactCommit - a.xactCommit) / n,
  rowsWrittenPerWorkflow: (b.tupWritten - a.tupWritten) / n,
});

// ---- the run ---------------------------------------------------------------------------------

const RUN_STATUS: StatusSource = { label: 'runs', table: 'durable_runs', failedStatus: 'FAILED', errorSql: "error->>'message'" };

/** Waits until `target` runs finished in this phase; fails with the runs by status if nothing finishes for a minute. */
export function untilDone(ws: WorkerSet, target: number, url: string, log?: (m: string) => void): Promise<void> {
  return guardStall(
    'nestjs-durable',
    ws.done.until(target, log),
    () => ws.done.n,
    () => statusSummary(url, RUN_STATUS),
  );
}

export async function runOurs(opts: OursOpts): Promise<OursResult> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`[ours] ${m}\n`));
  const N = opts.workflows;
  const P = Math.max(1, opts.workers);
  const idleRuns = opts.idleRuns ?? 50;
  const url = opts.databaseUrl;
  const dbName = databaseName(url);
  const payload = 'x'.repeat(opts.payloadBytes);
  const history = opts.history ?? true;
  const bulkRuns = Math.max(N, opts.bulkRuns ?? 10_000);
  const poolSize = peerPoolSize(opts.concurrency);
  const notes: string[] = [];
  const cfg = (worker: boolean): HostConfig => ({
    url,
    steps: opts.steps,
    concurrency: opts.concurrency,
    dbWrite: opts.dbWrite,
    worker,
    history,
    pollIntervalMs: opts.pollIntervalMs,
    poolSize,
    prepared: opts.prepared,
  });
  const startPhaseWorkers = () => startWorkers(cfg(true), P);
  const startClient = async () => {
    const h = new OursHost(cfg(false));
    await h.start();
    return h;
  };
  const profileFile = (phase: string) => (i: number) => `${opts.cpuProfDir}/ours-${phase}-${P === 1 ? 'main' : `worker${i}`}.cpuprofile`;

  log(`recreating database ${dbName} (schema: prisma/migrations)`);
  await recreateDatabase(url);
  await createSchema(url);
  if (opts.limits) {
    const { globalConcurrency: g, keyConcurrency: k } = opts.limits;
    await withClient(url, (c) =>
      c.query(`INSERT INTO durable_queue_limits (queue, global_concurrency, key_concurrency) VALUES ($1, $2, $3)`, [QUEUE, g, k]),
    );
    notes.push(
      `flow control: queue "${QUEUE}" limited (globalConcurrency ${g}, keyConcurrency ${k ?? 'none'}): every claim is the limited one ` +
        `(a transaction: LOCK_QUEUE_LIMITS + CLAIM_LIMITED, not in the statement counts) and no start takes the in-process path`,
    );
  }

  // ---- A: warm-up and idle probe (enqueued from another process) ----
  log(
    `workers: ${P === 1 ? 'in this process' : `${P} processes`}, concurrency ${opts.concurrency} each, history ${history ? 'on' : 'off'}, poll ${opts.pollIntervalMs ?? 'default (1000)'} ms`,
  );
  let ws = await startPhaseWorkers();
  let client = ws.host ?? (await startClient());
  const warm = Math.min(100, Math.max(20, opts.concurrency * 4));
  log(`warm-up: ${warm} workflows (half startMany, half startRun)`);
  await client.engine.startMany(items('warm-', 0, warm / 2, payload));
  for (let i = warm / 2; i < warm; i++) await client.engine.startRun(WORKFLOW, payload, { id: `warm-${i}` });
  await untilDone(ws, warm, url);
  log(`idle probe: ${idleRuns} sequential runs started from another process`);
  const enq = new Child(
    () => {},
    (e) => log(`idle enqueuer failed: ${e.message}`),
  );
  const idleDone = enq.waitFor('idle-done');
  await enq.request({ type: 'init', role: 'enqueuer', cfg: cfg(false), runs: idleRuns, prefix: 'idle-', payload }, 'ready');
  await idleDone;
  await enq.exited;
  if (!ws.host) await client.stop();
  await ws.stop();

  // ---- B: end to end ----
  await sleep(300);
  const e2eStats0 = await readDbStats(url);
  ws = await startPhaseWorkers();
  client = ws.host ?? (await startClient());
  await sleep(200);
  const e2eWin = new Window(ws, ws.host ? undefined : client);
  await e2eWin.begin();
  if (opts.cpuProfDir) await ws.profileStart();
  log(`end-to-end: enqueueing ${N} workflows one by one while workers run`);
  const every = Math.max(1, Math.floor(N / 4));
  for (let i = 0; i < N; i++) {
    await client.engine.startRun(WORKFLOW, payload, { id: `e2e-${i}` });
    if ((i + 1) % every === 0) log(`  enqueued ${i + 1}/${N} (${ws.done.n} done)`);
  }
  await untilDone(ws, N, url, log);
  const e2eProfiles = opts.cpuProfDir ? await ws.profileStop(profileFile('e2e')) : undefined;
  const e2e = await e2eWin.end(dbName, N);
  if (!ws.host) await client.stop();
  await ws.stop();
  await sleep(300);
  const e2eDb = dbDelta(e2eStats0, await readDbStats(url), N);

  // ---- C: enqueue rates (no worker anywhere), then saturation ----
  client = await startClient();
  log(`enqueue one by one: ${N} startRun, no worker running`);
  let t0 = performance.now();
  for (let i = 0; i < N; i++) await client.engine.startRun(WORKFLOW, payload, { id: `obo-${i}`, queue: UNSERVED_QUEUE });
  const oneByOnePerSec = N / ((performance.now() - t0) / 1000);
  log(`enqueue bulk: ${bulkRuns} with startMany in batches of ${BULK_BATCH}`);
  const bulkPerSec = bulkRuns / ((await enqueueBulk(client, 'bulk-', bulkRuns, payload, UNSERVED_QUEUE)) / 1000);
  await withClient(url, async (c) => {
    await c.query(`DELETE FROM durable_run_events WHERE run_id IN (SELECT id FROM durable_runs WHERE queue = $1)`, [UNSERVED_QUEUE]);
    await c.query(`DELETE FROM durable_runs WHERE queue = $1`, [UNSERVED_QUEUE]);
    await c.query('VACUUM ANALYZE durable_runs');
    await c.query('VACUUM ANALYZE durable_run_events');
  });
  log(`saturation: startMany ${N} with no worker running, then start the workers and drain`);
  await enqueueBulk(client, 'sat-', N, payload);
  await client.stop();
  await sleep(300);
  const drainStats0 = await readDbStats(url);
  t0 = performance.now();
  ws = await startPhaseWorkers();
  const drainWin = new Window(ws);
  await drainWin.begin();
  if (opts.cpuProfDir) await ws.profileStart();
  await untilDone(ws, N, url, log);
  const drainProfiles = opts.cpuProfDir ? await ws.profileStop(profileFile('drain')) : undefined;
  const drain = await drainWin.end(dbName, N);
  await ws.stop();
  await sleep(300);
  const drainDb = dbDelta(drainStats0, await readDbStats(url), N);

  // ---- figures ----
  log('reading timings from durable_runs');
  const e2eT = await readTimings(url, 'e2e-');
  const satT = await readTimings(url, 'sat-');
  const idleT = await readTimings(url, 'idle-');
  checkTimings('end-to-end', e2eT, N, notes);
  checkTimings('saturation', satT, N, notes);
  checkTimings('idle probe', idleT, idleRuns, notes);
  const e2eWallS = (Math.max(...e2eT.map((t) => t.finished)) - Math.min(...e2eT.map((t) => t.created))) / 1000;
  const satWallS = (Math.max(...satT.map((t) => t.finished)) - Math.min(...satT.map((t) => t.started))) / 1000;
  const wps = N / satWallS;
  const fastPathShare = e2eT.filter((t) => t.started === t.created).length / e2eT.length;
  const idleStart = percentiles(
    idleT.map((t) => t.started - t.created),
    [50, 99],
  );

  notes.push(
    `nestjs-durable (engine from libs/durable/src): ${P === 1 ? 'worker in the benchmark process' : `${P} worker processes`}, concurrency ${opts.concurrency} per process, ` +
      `pool ${poolSize}/process, pollIntervalMs ${opts.pollIntervalMs ?? '1000 (default)'}, history ${history ? 'on (default)' : 'off'}, leaseMs 30000 (default)` +
      (opts.prepared ? '; EXPERIMENT: engine statements sent as named prepared statements' : ''),
    `saturation: drain of ${N} pre-enqueued (startMany), first started_at -> last finished_at ${satWallS.toFixed(2)} s`,
    `end-to-end: ${(N / e2eWallS).toFixed(0)} wf/s over ${e2eWallS.toFixed(2)} s; ${(fastPathShare * 100).toFixed(0)} % of the runs took the in-process fast path (started_at = created_at)` +
      (P === 1 ? '' : ' (none expected: the enqueuer is not a worker)'),
    `statements/wf (engine, counted at its pool): end-to-end ${e2e.statementsPerWorkflowTotal.toFixed(2)}, drain ${drain.statementsPerWorkflowTotal.toFixed(2)}; ` +
      `commits/wf drain ${drainDb.commitsPerWorkflow.toFixed(2)}; CPU ms/wf drain ${drain.cpuMsPerWorkflow.total.toFixed(2)}`,
    `postgres CPU: ${(e2e.pgDbMs / N).toFixed(2)} ms/wf in ${dbName} backends + ${(e2e.pgAuxMs / N).toFixed(2)} ms/wf server processes; ${e2e.pgOtherMs.toFixed(0)} ms in other databases' backends excluded`,
    `enqueue bulk: ${bulkRuns} runs, startMany batches of ${BULK_BATCH}, one statement each`,
    `idle probe: ${idleT.length} sequential runs from a separate process (worker: false), 5-35 ms gaps; start = INSERT + pg_notify -> LISTEN -> claim`,
  );

  const figures: PeerFigures = {
    name: 'nestjs-durable',
    workflowsPerSec: wps,
    stepsPerSec: wps * opts.steps,
    endToEndWorkflowsPerSec: N / e2eWallS,
    enqueueOneByOnePerSec: oneByOnePerSec,
    enqueueBulkPerSec: bulkPerSec,
    latency: {
      enqueueToStart: p50p90p99(e2eT.map((t) => t.started - t.created)),
      enqueueToDone: p50p90p99(e2eT.map((t) => t.finished - t.created)),
    },
    idle: { enqueueToStart: { p50: idleStart.p50, p99: idleStart.p99 } },
    cpuMsPerWorkflow: e2e.cpuMsPerWorkflow,
    commitsPerWorkflow: e2eDb.commitsPerWorkflow,
    rowsWrittenPerWorkflow: e2eDb.rowsWrittenPerWorkflow,
    notes,
  };
  const phase = (w: typeof e2e, db: ReturnType<typeof dbDelta>, profiles?: ProfileSummary[]): PhaseCost => ({
    workflows: N,
    wallS: w.wallS,
    statementsPerWorkflow: w.statementsPerWorkflow,
    statementsPerWorkflowTotal: w.statementsPerWorkflowTotal,
    userWritesPerWorkflow: w.userWritesPerWorkflow,
    ...db,
    cpuMsPerWorkflow: w.cpuMsPerWorkflow,
    ...(profiles ? { profiles } : {}),
  });
  return {
    figures,
    detail: {
      config: {
        processes: P,
        concurrency: opts.concurrency,
        poolSize,
        history,
        pollIntervalMs: opts.pollIntervalMs ?? 1000,
        prepared: !!opts.prepared,
      },
      endToEnd: { ...phase(e2e, e2eDb, e2eProfiles), fastPathShare },
      drain: phase(drain, drainDb, drainProfiles),
      enqueue: { oneByOnePerSec, bulkPerSec, bulkRuns, bulkBatch: BULK_BATCH },
    },
  };
}

export { QUEUE, SQL, enqueueBulk, readTimings };
