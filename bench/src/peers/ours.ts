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
 *   B. end to end: `callers` concurrent callers start N one by one (startRun, each awaited) while
 *      the workers run. With processes = 1 the callers are in the worker process, so a start finding
 *      a free slot takes the in-process fast path (inserted already claimed, executed at once); the
 *      notes give the share. CPU, commits, rows, statements and latencies come from this phase.
 *      Then (processes = 1) the same with the callers in a forked process (worker: false): every
 *      start crosses processes. With processes > 1 the callers are this process, not a worker.
 *   C. enqueue rates with no worker anywhere (startRun one by one, startMany in batches), into
 *      a queue nobody serves (deleted afterwards); then saturation: startMany N, start the
 *      workers, drain. workflows/s = N / (first started_at -> last finished_at).
 * Timestamps are durable_runs.created_at / started_at / finished_at (database clock, ms).
 */
import { databaseName, readDbStats, recreateDatabase, withClient } from '../db.js';
import { peerPoolSize, type PeerFigures, type RunOpts } from '../figures.js';
import type { ProfileSummary } from '../profile.js';
import { guardStall, statusSummary, type StatusSource } from '../stall.js';
import { p50p90p99, percentiles } from '../stats.js';
import type { Snap } from './ours-child.js';
import { OursHost, QUEUE, UNSERVED_QUEUE, WORKFLOW, createSchema, SQL, type HostConfig } from './ours-lib.js';
import { Child, startWorkers, type WorkerSet } from './ours-workers.js';
import { checkTimings, dbDelta, readTimings, Window } from './ours-measure.js';
import { oneByOne, WARM_ONE_BY_ONE } from '../callers.js';

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
  /** N ÷ (first enqueue or start → last finish), database clock: the phase's figure in the table. */
  workflowsPerSec: number;
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
  /** The same, the starters in another process (P = 1; with P > 1 `endToEnd` is already from another process). */
  endToEndRemote?: PhaseCost;
  /**
   * Commits a run needs if it shares none with another run: its start, then one per step checkpoint
   * (the run's end can go with the last one). Group commit divides it among the runs in flight.
   */
  commitFloor: number;
  drain: PhaseCost;
  enqueue: { oneByOnePerSec: number; bulkPerSec: number; bulkRuns: number; bulkBatch: number };
}

export interface OursResult {
  figures: PeerFigures;
  detail: OursDetail;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const BULK_BATCH = 1000;

// ---- helpers ----------------------------------------------------------------------------------

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
  let client: OursHost | undefined = ws.host ?? (await startClient());
  const warm = Math.min(100, Math.max(20, opts.concurrency * 4));
  log(`warm-up: ${warm} workflows (half startMany, half startRun)`);
  await client.engine.startMany(items('warm-', 0, warm / 2, payload));
  for (let i = warm / 2; i < warm; i++) await client.engine.startRun(WORKFLOW, payload, { id: `warm-${i}` });
  await untilDone(ws, warm, url);
  log(`warm-up, one by one: ${WARM_ONE_BY_ONE} workflows from ${opts.callers} callers`);
  const warming = client;
  await oneByOne(WARM_ONE_BY_ONE, opts.callers, (i) => warming.engine.startRun(WORKFLOW, payload, { id: `warm-1b1-${i}` }));
  await untilDone(ws, warm + WARM_ONE_BY_ONE, url);
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

  // ---- B: end to end, `callers` one-by-one starters: in the worker's process, then (P = 1) from another one ----
  const endToEnd = async (prefix: string, remote: boolean) => {
    await sleep(300);
    const stats0 = await readDbStats(url);
    ws = await startPhaseWorkers();
    client = remote ? undefined : (ws.host ?? (await startClient()));
    const starter = remote
      ? new Child(
          () => {},
          (e) => log(`starter process failed: ${e.message}`),
        )
      : undefined;
    await starter?.request({ type: 'init', role: 'worker', cfg: cfg(false) }, 'ready');
    await sleep(200);
    const win = new Window(ws, ws.host || !client ? undefined : client);
    await win.begin();
    if (opts.cpuProfDir) await ws.profileStart();
    const where = remote ? 'another process' : P === 1 ? "the worker's process" : 'this process (workers forked)';
    log(`end-to-end (${prefix}): ${N} workflows started one by one by ${opts.callers} callers in ${where} while workers run`);
    const every = Math.max(1, Math.floor(N / 4));
    let started: Snap | undefined;
    if (starter) {
      const msg = { type: 'start-runs' as const, runs: N, callers: opts.callers, prefix, payload };
      started = (await starter.request<{ type: 'started'; snap: Snap }>(msg, 'started')).snap;
    } else {
      await oneByOne(
        N,
        opts.callers,
        (i) => client!.engine.startRun(WORKFLOW, payload, { id: `${prefix}${i}` }),
        (k) => k % every === 0 && log(`  enqueued ${k}/${N} (${ws.done.n} done)`),
      );
    }
    await untilDone(ws, N, url, log);
    const profiles = opts.cpuProfDir ? await ws.profileStop(profileFile(prefix.replace(/-$/, ''))) : undefined;
    const w = await win.end(dbName, N, started);
    if (starter) await starter.request({ type: 'stop' }, 'stop');
    else if (!ws.host) await client!.stop();
    await ws.stop();
    await sleep(300);
    return { w, db: dbDelta(stats0, await readDbStats(url), N), profiles };
  };
  const { w: e2e, db: e2eDb, profiles: e2eProfiles } = await endToEnd('e2e-', false);
  const remote = P === 1 ? await endToEnd('e2r-', true) : undefined;

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
  const e2rT = remote ? await readTimings(url, 'e2r-') : [];
  const satT = await readTimings(url, 'sat-');
  const idleT = await readTimings(url, 'idle-');
  checkTimings('end-to-end', e2eT, N, notes);
  if (remote) checkTimings('end-to-end from another process', e2rT, N, notes);
  checkTimings('saturation', satT, N, notes);
  checkTimings('idle probe', idleT, idleRuns, notes);
  const wallS = (ts: typeof e2eT) => (Math.max(...ts.map((t) => t.finished)) - Math.min(...ts.map((t) => t.created))) / 1000;
  const e2eWallS = wallS(e2eT);
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
    `end-to-end: ${opts.callers} callers start one by one; ${(N / e2eWallS).toFixed(0)} wf/s over ${e2eWallS.toFixed(2)} s; ${(fastPathShare * 100).toFixed(0)} % of the runs took the in-process fast path (started_at = created_at)` +
      (P === 1 ? '' : ' (none expected: the enqueuer is not a worker)'),
    ...(remote
      ? [
          `end-to-end from another process: the same ${opts.callers} callers in a forked process (engine with worker: false), every start crosses processes (INSERT + pg_notify -> LISTEN -> claim); ${(N / wallS(e2rT)).toFixed(0)} wf/s over ${wallS(e2rT).toFixed(2)} s`,
        ]
      : []),
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
    // With P > 1 the starters (this process) are not the workers: the end-to-end phase is already "from another process".
    endToEndRemoteWorkflowsPerSec: remote ? N / wallS(e2rT) : P > 1 ? N / e2eWallS : undefined,
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
  const phase = (w: typeof e2e, db: ReturnType<typeof dbDelta>, workflowsPerSec: number, profiles?: ProfileSummary[]): PhaseCost => ({
    workflows: N,
    wallS: w.wallS,
    workflowsPerSec,
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
      endToEnd: { ...phase(e2e, e2eDb, N / e2eWallS, e2eProfiles), fastPathShare },
      ...(remote ? { endToEndRemote: phase(remote.w, remote.db, N / wallS(e2rT), remote.profiles) } : {}),
      commitFloor: opts.steps + 1,
      drain: phase(drain, drainDb, wps, drainProfiles),
      enqueue: { oneByOnePerSec, bulkPerSec, bulkRuns, bulkBatch: BULK_BATCH },
    },
  };
}

export { QUEUE, SQL, enqueueBulk, readTimings };
