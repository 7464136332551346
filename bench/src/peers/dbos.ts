/**
 * DBOS Transact (@dbos-inc/dbos-sdk, pinned in bench/package.json) running the
 * benchmark workload: N workflows x k trivial steps through a DBOS queue.
 *
 * Phases, in one process, on a freshly recreated database:
 *   A. launch, register the queue, warm up (JIT, pools), idle probe
 *      (50 sequential runs), shutdown;
 *   B. end to end: read pg_stat_database, relaunch, enqueue all N one by one
 *      from `callers` concurrent loops while the workers run, wait for all, snapshot CPU, shutdown (which
 *      flushes the backends' counters), read pg_stat_database again. Gives
 *      CPU / commits / rows per workflow and the latencies;
 *   C. saturation: launch with no worker listening on the queue, enqueue N one
 *      by one (the enqueue rate), shutdown, relaunch with workers and drain:
 *      workflows/s = N / (first started_at -> last completed_at).
 * Latencies come from dbos.workflow_status (created_at, started_at_epoch_ms,
 * completed_at: epoch ms stamped with the database clock).
 */
import { DBOS } from '@dbos-inc/dbos-sdk';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { databaseName, readDbStats, recreateDatabase, withClient } from '../db.js';
import { peerPoolSize, writePoolSize, type PeerFigures, type RunOpts } from '../figures.js';
import { pgCpuDelta, snapshotPgCpu } from '../pg-cpu.js';
import { oneByOne, WARM_ONE_BY_ONE } from '../callers.js';
import { guardStall, statusSummary, type StatusSource } from '../stall.js';
import { p50p90p99, percentiles } from '../stats.js';

export interface DbosOpts extends RunOpts {
  /** The queue's minPollingIntervalMs (DBOS default 1000). */
  pollIntervalMs?: number;
  /** Sequential runs in the idle probe. */
  idleRuns?: number;
  /** Progress sink (stderr by default). */
  log?: (msg: string) => void;
}

export const DBOS_DEFAULT_POLL_MS = 10;
const QUEUE = 'bench_queue';
const APP_NAME = 'nestjs-durable-bench';

let cachedVersion: string | undefined;
/** Installed SDK version (its package.json is not in the package's "exports", so walk up from the entry). */
export function dbosVersion(): string {
  if (cachedVersion) return cachedVersion;
  let dir = dirname(createRequire(import.meta.url).resolve('@dbos-inc/dbos-sdk'));
  while (dir !== dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version: string };
      if (pkg.name === '@dbos-inc/dbos-sdk') return (cachedVersion = pkg.version);
    }
    dir = dirname(dir);
  }
  return (cachedVersion = 'unknown');
}

// ---- workload (registered once per process; reads its knobs from `current`) ----

const current: { steps: number; dbWrite: boolean; pool?: pg.Pool } = { steps: 3, dbWrite: false };
/** Called by the workflow body once its last step returned (before DBOS records the output). */
let onBodyDone: (workflowID: string) => void = () => {};

let workflowFn: ((payload: string) => Promise<number>) | undefined;

function registerWorkload(): (payload: string) => Promise<number> {
  if (workflowFn) return workflowFn;
  const step = DBOS.registerStep(
    async (workflowID: string, i: number): Promise<number> => {
      if (current.dbWrite) {
        await current.pool!.query('INSERT INTO bench_step_write (workflow_id, step) VALUES ($1, $2)', [workflowID, i]);
      }
      return i;
    },
    { name: 'benchStep' },
  );
  workflowFn = DBOS.registerWorkflow(
    async (payload: string): Promise<number> => {
      const id = DBOS.workflowID!;
      for (let i = 0; i < current.steps; i++) await step(id, i);
      onBodyDone(id);
      return payload.length;
    },
    { name: 'benchWorkflow' },
  );
  return workflowFn;
}

// ---- helpers ----

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Timing {
  id: string;
  created: number;
  started: number;
  completed: number;
  status: string;
}

async function readTimings(url: string, prefix: string): Promise<Timing[]> {
  return withClient(url, async (c) => {
    const { rows } = await c.query(
      `SELECT workflow_uuid, status, created_at, started_at_epoch_ms, completed_at
         FROM dbos.workflow_status WHERE workflow_uuid LIKE $1`,
      [`${prefix}%`],
    );
    return rows.map((r) => ({
      id: r.workflow_uuid as string,
      status: r.status as string,
      created: Number(r.created_at),
      started: Number(r.started_at_epoch_ms),
      completed: Number(r.completed_at),
    }));
  });
}

const DBOS_STATUS: StatusSource = { label: 'DBOS workflows', table: 'dbos.workflow_status', failedStatus: 'ERROR', errorSql: 'error' };

/** Wait until DBOS has recorded the outcome of these workflows (the body finishing is not enough). */
async function awaitRecorded(ids: string[]): Promise<void> {
  for (const id of ids) {
    await DBOS.retrieveWorkflow(id).getResult({ pollingIntervalMs: 5 });
  }
}

// ---- the run ----

export async function runDbos(opts: DbosOpts): Promise<PeerFigures> {
  try {
    return await runDbosPhases(opts);
  } catch (err) {
    // Leave nothing connected for the phases after this one.
    await DBOS.shutdown().catch(() => {});
    await current.pool?.end().catch(() => {});
    current.pool = undefined;
    throw err;
  }
}

async function runDbosPhases(opts: DbosOpts): Promise<PeerFigures> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`[dbos] ${m}\n`));
  const pollMs = opts.pollIntervalMs ?? DBOS_DEFAULT_POLL_MS;
  const idleRuns = opts.idleRuns ?? 50;
  const N = opts.workflows;
  const url = opts.databaseUrl;
  const dbName = databaseName(url);
  const payload = 'x'.repeat(opts.payloadBytes);
  const poolSize = peerPoolSize(opts.concurrency);
  const notes: string[] = [];

  log(`recreating database ${dbName}`);
  await recreateDatabase(url);
  await withClient(url, (c) =>
    c.query('CREATE TABLE bench_step_write (id bigserial PRIMARY KEY, workflow_id text NOT NULL, step int NOT NULL)'),
  );

  current.steps = opts.steps;
  current.dbWrite = opts.dbWrite;
  const newPool = () => (opts.dbWrite ? new pg.Pool({ connectionString: url, max: writePoolSize(opts.concurrency) }) : undefined);

  /** Launch DBOS; `dispatch: false` keeps this process from dequeuing the bench queue. */
  const launch = async (dispatch: boolean) => {
    current.pool = newPool();
    DBOS.setConfig({
      name: APP_NAME,
      systemDatabaseUrl: url,
      systemDatabasePoolSize: poolSize,
      logLevel: 'warn',
      ...(dispatch ? {} : { listenQueues: ['bench_nobody_listens'] }),
    });
    await DBOS.launch();
  };
  /** Shut DBOS down and close the step pool; exiting backends flush their statistics. */
  const shutdown = async () => {
    await DBOS.shutdown();
    await current.pool?.end();
    current.pool = undefined;
    await sleep(300);
  };
  const wf = registerWorkload();

  // Completion tracking by in-memory signal from the workflow body.
  const waiters = new Map<string, () => void>();
  const finishOrder: string[] = [];
  onBodyDone = (id) => {
    finishOrder.push(id);
    const w = waiters.get(id);
    if (w) {
      waiters.delete(id);
      w();
    }
  };
  /** Enqueue one workflow; resolves once enqueued, with a promise of its body finishing. */
  const enqueue = async (id: string): Promise<{ done: Promise<void> }> => {
    const done = new Promise<void>((r) => waiters.set(id, r));
    await DBOS.startWorkflow(wf, { queueName: QUEUE, workflowID: id })(payload);
    return { done };
  };
  /** Enqueue N one by one from `callers` concurrent loops (each awaits its enqueue). */
  const enqueueAll = async (prefix: string, callers = 1, count = N): Promise<{ ms: number; done: Promise<void[]> }> => {
    const t0 = performance.now();
    const done: Promise<void>[] = [];
    const every = Math.max(1, Math.floor(count / 4));
    await oneByOne(
      count,
      callers,
      async (i) => done.push((await enqueue(`${prefix}${i}`)).done),
      (k) => k % every === 0 && log(`  enqueued ${k}/${count} (${finishOrder.length} done)`),
    );
    return { ms: performance.now() - t0, done: Promise.all(done) };
  };
  const awaitAll = async (done: Promise<void[]>) => {
    const progress = setInterval(() => log(`  done ${finishOrder.length}/${N}`), 2000);
    try {
      await guardStall(
        'DBOS',
        done,
        () => finishOrder.length,
        () => statusSummary(url, DBOS_STATUS),
      );
    } finally {
      clearInterval(progress);
    }
    await awaitRecorded(finishOrder.slice(-opts.concurrency));
  };

  // ---- phase A: warm-up and idle probe ----
  log(`launching DBOS ${dbosVersion()} (queue ${QUEUE}: workerConcurrency=${opts.concurrency}, minPollingIntervalMs=${pollMs})`);
  await launch(true);
  await DBOS.registerQueue(QUEUE, {
    workerConcurrency: opts.concurrency,
    minPollingIntervalMs: pollMs,
    onConflict: 'always_update',
  });
  // A queue registered after launch is picked up by the dispatcher's reconcile (every 1 s).
  await sleep(1500);

  const warm = Math.min(50, Math.max(10, opts.concurrency * 2));
  log(`warm-up: ${warm} workflows`);
  const warmDone: Promise<void>[] = [];
  for (let i = 0; i < warm; i++) warmDone.push((await enqueue(`warm-${i}`)).done);
  await guardStall(
    'DBOS warm-up',
    Promise.all(warmDone),
    () => finishOrder.length,
    () => statusSummary(url, DBOS_STATUS),
  );

  log(`warm-up, one by one: ${WARM_ONE_BY_ONE} workflows from ${opts.callers} callers`);
  await guardStall(
    'DBOS warm-up, one by one',
    (await enqueueAll('warm-1b1-', opts.callers, WARM_ONE_BY_ONE)).done,
    () => finishOrder.length,
    () => statusSummary(url, DBOS_STATUS),
  );

  log(`idle probe: ${idleRuns} sequential runs`);
  for (let i = 0; i < idleRuns; i++) {
    // A random gap so enqueues do not phase-lock with the poll timer.
    await sleep(5 + Math.random() * 3 * pollMs);
    await (
      await enqueue(`idle-${i}`)
    ).done;
  }
  await awaitRecorded(finishOrder.slice(-1));
  await shutdown();

  // ---- phase B: end to end (`callers` concurrent one-by-one enqueuers while the workers run) ----
  // CPU, commits and rows per workflow, latencies, end-to-end throughput.
  const statsBefore = await readDbStats(url);
  await launch(true);
  finishOrder.length = 0;
  const cpu0 = process.cpuUsage();
  const pg0 = snapshotPgCpu();
  log(`end-to-end: enqueueing ${N} workflows one by one from ${opts.callers} callers while workers run`);
  const e2e = await enqueueAll('e2e-', opts.callers);
  await awaitAll(e2e.done);
  const cpu1 = process.cpuUsage(cpu0);
  const pg1 = snapshotPgCpu();
  await shutdown();
  const statsAfter = await readDbStats(url);

  // ---- phase C: saturation (drain a pre-filled queue) ----
  log(`saturation: enqueueing ${N} workflows one by one with no worker listening`);
  await launch(false);
  finishOrder.length = 0;
  const pre = await enqueueAll('sat-');
  await shutdown();
  log(`saturation: relaunching with workers, draining ${N}`);
  await launch(true);
  await awaitAll(pre.done);
  await shutdown();

  // ---- figures ----
  log('reading timings from dbos.workflow_status');
  const e2eT = await readTimings(url, 'e2e-');
  const satT = await readTimings(url, 'sat-');
  const idleT = await readTimings(url, 'idle-');
  for (const [name, rows] of [
    ['end-to-end', e2eT],
    ['saturation', satT],
  ] as const) {
    const bad = rows.filter((t) => t.status !== 'SUCCESS').length;
    if (rows.length !== N || bad > 0) notes.push(`WARNING: ${name}: ${rows.length} rows, ${bad} not SUCCESS`);
  }
  const e2eWallS = (Math.max(...e2eT.map((t) => t.completed)) - Math.min(...e2eT.map((t) => t.created))) / 1000;
  const satWallS = (Math.max(...satT.map((t) => t.completed)) - Math.min(...satT.map((t) => t.started))) / 1000;
  const wps = N / satWallS;
  const pgCpu = pgCpuDelta(pg0, pg1, dbName);
  const nodeMs = (cpu1.user + cpu1.system) / 1000;
  const pgMs = pgCpu.dbMs + pgCpu.auxMs;
  const idleStart = percentiles(
    idleT.map((t) => t.started - t.created),
    [50, 99],
  );

  notes.push(
    `DBOS ${dbosVersion()}: queue "${QUEUE}" via DBOS.registerQueue({ workerConcurrency: ${opts.concurrency}, minPollingIntervalMs: ${pollMs} }) (SDK default poll 1000 ms); systemDatabasePoolSize ${poolSize}; one process`,
    `saturation: drain of ${N} pre-enqueued, first started_at -> last completed_at ${satWallS.toFixed(2)} s`,
    `end-to-end (${opts.callers} callers enqueue one by one while workers run, same process): ${(N / e2eWallS).toFixed(0)} wf/s over ${e2eWallS.toFixed(2)} s; enqueue rate under load ${(N / (e2e.ms / 1000)).toFixed(0)}/s`,
    `postgres CPU: ${(pgCpu.dbMs / N).toFixed(2)} ms/wf in ${dbName} backends + ${(pgCpu.auxMs / N).toFixed(2)} ms/wf server processes; ${pgCpu.otherMs.toFixed(0)} ms in other databases' backends excluded`,
    `commits/rows include DBOS's queue polling (a transaction per poll, every ~${pollMs} ms) and one launch`,
    `idle probe: ${idleT.length} sequential runs, enqueuer in the worker process (DBOS dispatch is poll-only)`,
  );

  return {
    name: `DBOS ${dbosVersion()}`,
    workflowsPerSec: wps,
    stepsPerSec: wps * opts.steps,
    endToEndWorkflowsPerSec: N / e2eWallS,
    enqueueOneByOnePerSec: N / (pre.ms / 1000),
    latency: {
      enqueueToStart: p50p90p99(e2eT.map((t) => t.started - t.created)),
      enqueueToDone: p50p90p99(e2eT.map((t) => t.completed - t.created)),
    },
    idle: { enqueueToStart: { p50: idleStart.p50, p99: idleStart.p99 } },
    cpuMsPerWorkflow: { node: nodeMs / N, postgres: pgMs / N, total: (nodeMs + pgMs) / N },
    commitsPerWorkflow: (statsAfter.xactCommit - statsBefore.xactCommit) / N,
    rowsWrittenPerWorkflow: (statsAfter.tupWritten - statsBefore.tupWritten) / N,
    notes,
  };
}
