/**
 * The jobs comparison's phases, the same for every peer, each peer on its own fresh database:
 *   warm-up: 200 jobs from the callers;
 *   idle: `idleJobs` jobs one after another (5–35 ms apart), each waited for: enqueue call → handler
 *     start, node clock (the handler runs in this process);
 *   one by one: `callers` concurrent callers each enqueue and await one job at a time, `oneByOne`
 *     jobs in all, while the workers run: jobs/s = jobs ÷ (first enqueue → the database shows none
 *     unfinished);
 *   drain: workers stopped, `drain` jobs enqueued in bulk, workers started: jobs/s = jobs ÷ (first
 *     handler start → the database shows none unfinished).
 * CPU per job: this process (peer and harness) plus the Postgres backends of the peer's database and
 * the server's own processes (pg-cpu.ts), over the phase; commits per job from pg_stat_database.
 */
import { databaseName, readDbStats, recreateDatabase } from '../db.js';
import { pgCpuDelta, snapshotPgCpu } from '../pg-cpu.js';
import { percentiles } from '../stats.js';
import { sleep, type JobHooks, type JobPeer } from './peer.js';

export interface JobPhaseCost {
  jobs: number;
  jobsPerSec: number;
  cpuMsPerJob: { node: number; postgres: number; total: number };
  commitsPerJob: number;
}

export interface JobPeerFigures {
  name: string;
  config: Record<string, unknown>;
  idleStartMs: { p50: number; p99: number };
  oneByOne: JobPhaseCost;
  drain: JobPhaseCost;
}

export interface JobsOpts {
  drain: number;
  oneByOne: number;
  callers: number;
  idleJobs: number;
  log: (m: string) => void;
}

/** Marks of handler starts by job id, shared by the peer's hooks and the phases. */
export class StartLog implements JobHooks {
  readonly at = new Map<string, number>();
  first = Infinity;
  started(id: string): void {
    const now = performance.now();
    if (!this.at.has(id)) this.at.set(id, now);
    if (now < this.first) this.first = now;
  }
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/**
 * Polls the database until none of the peer's jobs is unfinished; fails after `stallMs` without progress.
 * Each poll counts the peer's unfinished jobs, which on a table of tens of thousands of rows is a
 * sequential scan of a few ms on a backend of the peer's database: at one poll per 10 ms that took a
 * quarter of a core from the peer being measured, and counted in its Postgres CPU. So it polls every
 * 100 ms while more than 500 jobs are left (a drain finishes hundreds per 100 ms), then every 5 ms, so
 * the end is still seen within a few ms.
 */
async function untilFinished(peer: JobPeer, log: (m: string) => void, stallMs = 60_000): Promise<number> {
  let last = -1;
  let lastChange = performance.now();
  let lastLog = performance.now();
  for (;;) {
    const n = await peer.unfinished();
    const now = performance.now();
    if (n === 0) return now;
    if (n !== last) [last, lastChange] = [n, now];
    if (now - lastChange > stallMs) throw new Error(`${peer.name}: ${n} jobs unfinished, no progress for ${stallMs / 1000} s`);
    if (now - lastLog > 2000) [lastLog] = [now, log(`  ${n} unfinished`)];
    await sleep(n > 500 ? 100 : 5);
  }
}

/** CPU and commits over a window. */
async function window(url: string, fn: () => Promise<{ jobs: number; seconds: number }>): Promise<JobPhaseCost> {
  const db = databaseName(url);
  const s0 = await readDbStats(url);
  const pg0 = snapshotPgCpu();
  const n0 = cpuMs();
  const { jobs, seconds } = await fn();
  const node = cpuMs() - n0;
  const pgc = pgCpuDelta(pg0, snapshotPgCpu(), db);
  await sleep(1100); // backends flush their pg_stat_database counters about once a second
  const s1 = await readDbStats(url);
  const pgMs = pgc.dbMs + pgc.auxMs;
  return {
    jobs,
    jobsPerSec: jobs / seconds,
    cpuMsPerJob: { node: node / jobs, postgres: pgMs / jobs, total: (node + pgMs) / jobs },
    commitsPerJob: (s1.xactCommit - s0.xactCommit) / jobs,
  };
}

/** `n` jobs from `callers` concurrent callers, each awaiting its enqueue before the next. */
async function enqueueByCallers(peer: JobPeer, prefix: string, n: number, callers: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      for (let i = next++; i < n; i = next++) await peer.enqueue(`${prefix}${i}`);
    }),
  );
}

export async function runJobPeer(url: string, make: (hooks: JobHooks) => JobPeer, o: JobsOpts): Promise<JobPeerFigures> {
  const starts = new StartLog();
  const peer = make(starts);
  await recreateDatabase(url);
  try {
    await peer.setup();
    o.log(`${peer.name}: ${JSON.stringify(peer.config)}`);
    await peer.startWorkers();
    await enqueueByCallers(peer, 'warm-', 200, o.callers);
    await untilFinished(peer, o.log);

    o.log(`  idle: ${o.idleJobs} jobs one after another`);
    const idle: number[] = [];
    for (let i = 0; i < o.idleJobs; i++) {
      await sleep(5 + Math.random() * 30);
      const id = `idle-${i}`;
      const t = performance.now();
      await peer.enqueue(id);
      while (!starts.at.has(id)) await sleep(0.2);
      idle.push(starts.at.get(id)! - t);
    }
    await untilFinished(peer, o.log);

    o.log(`  one by one: ${o.oneByOne} jobs from ${o.callers} concurrent callers while the workers run`);
    const oneByOne = await window(url, async () => {
      const t0 = performance.now();
      await enqueueByCallers(peer, 'obo-', o.oneByOne, o.callers);
      const end = await untilFinished(peer, o.log);
      return { jobs: o.oneByOne, seconds: (end - t0) / 1000 };
    });
    o.log(`  one by one: ${oneByOne.jobsPerSec.toFixed(0)} jobs/s`);

    o.log(`  drain: ${o.drain} jobs enqueued in bulk with no worker running, then the workers start`);
    await peer.stopWorkers();
    await peer.enqueueMany(Array.from({ length: o.drain }, (_, i) => `drain-${i}`));
    await sleep(300);
    starts.first = Infinity;
    const drain = await window(url, async () => {
      await peer.startWorkers();
      const end = await untilFinished(peer, o.log);
      return { jobs: o.drain, seconds: (end - starts.first) / 1000 };
    });
    o.log(`  drain: ${drain.jobsPerSec.toFixed(0)} jobs/s`);
    const p = percentiles(idle, [50, 99]);
    return { name: peer.name, config: peer.config, idleStartMs: { p50: p.p50, p99: p.p99 }, oneByOne, drain };
  } finally {
    await peer.close();
  }
}
