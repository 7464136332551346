/**
 * npm run bench -- jobs [--jobs 20000] [--one-by-one 3000] [--callers 10] [--idle-jobs 50] [--ours-concurrency 200] [--peers graphile,pgboss,ours,ours_notkept,ours_nohistory]
 * Job-queue peers side by side on the same Postgres in one run: graphile-worker, pg-boss and our
 * 1-step workflow (phases.ts). Also a phase of the main run (`--skip-jobs` leaves it out).
 * Databases <prefix>_jobs_graphile, <prefix>_jobs_pgboss, <prefix>_jobs_ours (dropped at the end).
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { benchDbUrl, dropDatabase } from '../db.js';
import { GraphilePeer } from './graphile.js';
import { OURS_JOB_CONCURRENCY, OursJobPeer } from './ours-job.js';
import { PgBossPeer } from './pgboss.js';
import { withStatistics } from '../autoanalyze.js';
import { runJobPeer, type JobPeerFigures, type JobsOpts } from './phases.js';
import type { JobHooks, JobPeer } from './peer.js';
import { PG_URL_OPTION, positiveInt } from '../cli-args.js';

export interface JobsReport {
  loadAverage: number[];
  loadAverageAtEnd?: number[];
  opts: Omit<JobsOpts, 'log'> & { oursConcurrency: number };
  peers: JobPeerFigures[];
  errors: Record<string, string>;
}

export interface JobsRunOpts extends Omit<JobsOpts, 'log'> {
  pgUrl: string;
  oursConcurrency: number;
  /** Peers to run (graphile, pgboss, ours, ours_notkept, ours_nohistory); all when absent. */
  only?: string[];
  log: (m: string) => void;
}

export async function runJobs(o: JobsRunOpts): Promise<JobsReport> {
  const report: JobsReport = {
    loadAverage: loadavg().map((x) => Number(x.toFixed(2))),
    opts: { drain: o.drain, oneByOne: o.oneByOne, callers: o.callers, idleJobs: o.idleJobs, oursConcurrency: o.oursConcurrency },
    peers: [],
    errors: {},
  };
  const peers: Array<[string, (url: string, h: JobHooks) => JobPeer]> = [
    ['graphile', (url, h) => new GraphilePeer(url, h)],
    ['pgboss', (url, h) => new PgBossPeer(url, h)],
    ['ours', (url, h) => new OursJobPeer(url, h, o.oursConcurrency)],
    ['ours_notkept', (url, h) => new OursJobPeer(url, h, o.oursConcurrency, true, true)],
    ['ours_nohistory', (url, h) => new OursJobPeer(url, h, o.oursConcurrency, false)],
  ];
  for (const [key, make] of peers) {
    if (o.only && !o.only.includes(key)) continue;
    const url = benchDbUrl(o.pgUrl, `jobs_${key}`);
    try {
      const { result, analyses } = await withStatistics(url, () =>
        runJobPeer(url, (h) => make(url, h), { ...o, log: (m) => o.log(`[jobs ${key}] ${m}`) }),
      );
      // The server runs without autovacuum: how often the bench analyzed the tables as autovacuum would have.
      report.peers.push(analyses ? { ...result, config: { ...result.config, benchAnalyzed: analyses } } : result);
    } catch (e) {
      report.errors[key] = (e as Error).stack ?? String(e);
      o.log(`[jobs ${key}] FAILED: ${report.errors[key]}`);
    } finally {
      await dropDatabase(url).catch(() => {});
    }
  }
  report.loadAverageAtEnd = loadavg().map((x) => Number(x.toFixed(2)));
  return report;
}

const fmt = (v: number | undefined, d: number) =>
  v === undefined || !Number.isFinite(v) ? 'n/a' : v.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });

/**
 * One column per peer, then ours (kept runs) ÷ each other peer, and ours with runs not kept ÷
 * graphile-worker (which deletes a done job): the targets compare kept runs with pg-boss (which keeps
 * its jobs) and runs not kept with graphile-worker.
 */
export function renderJobs(r: JobsReport): string {
  const isOurs = (p: JobPeerFigures) => p.name.startsWith('nestjs-durable');
  const ours = r.peers.find((p) => isOurs(p) && !p.name.includes('not kept'));
  const notKept = r.peers.find((p) => isOurs(p) && p.name.includes('not kept'));
  const others = r.peers.filter((p) => !isOurs(p));
  const g = others.find((p) => p.name.startsWith('graphile'));
  const b = others.find((p) => p.name.startsWith('pg-boss'));
  const ratios: Array<[string, JobPeerFigures, JobPeerFigures]> = [
    ...(ours ? others.map((p): [string, JobPeerFigures, JobPeerFigures] => [`ours ÷ ${p.name.split(' ')[0]}`, ours, p]) : []),
    ...(notKept && g ? [['not kept ÷ graphile-worker', notKept, g] as [string, JobPeerFigures, JobPeerFigures]] : []),
  ];
  const rows: Array<[string, (p: JobPeerFigures) => number, number, 'higher' | 'lower']> = [
    ['drain jobs/s', (p) => p.drain.jobsPerSec, 0, 'higher'],
    [`one by one jobs/s (${r.opts.callers} callers)`, (p) => p.oneByOne.jobsPerSec, 0, 'higher'],
    ['idle enqueue→start p50 ms', (p) => p.idleStartMs.p50, 2, 'lower'],
    ['idle enqueue→start p99 ms', (p) => p.idleStartMs.p99, 2, 'lower'],
    ['drain CPU ms/job node', (p) => p.drain.cpuMsPerJob.node, 3, 'lower'],
    ['drain CPU ms/job postgres', (p) => p.drain.cpuMsPerJob.postgres, 3, 'lower'],
    ['drain CPU ms/job total', (p) => p.drain.cpuMsPerJob.total, 3, 'lower'],
    ['one by one CPU ms/job node', (p) => p.oneByOne.cpuMsPerJob.node, 3, 'lower'],
    ['one by one CPU ms/job postgres', (p) => p.oneByOne.cpuMsPerJob.postgres, 3, 'lower'],
    ['one by one CPU ms/job total', (p) => p.oneByOne.cpuMsPerJob.total, 3, 'lower'],
    ['drain commits/job', (p) => p.drain.commitsPerJob, 3, 'lower'],
    ['one by one commits/job', (p) => p.oneByOne.commitsPerJob, 3, 'lower'],
  ];
  const header = ['figure', ...r.peers.map((p) => p.name), ...ratios.map(([label]) => label)];
  const body = rows.map(([name, f, d]) => [
    name,
    ...r.peers.map((p) => fmt(f(p), d)),
    ...ratios.map(([, a, p]) => `${(f(a) / f(p)).toFixed(2)}x`),
  ]);
  const all = [header, ...body];
  const w = header.map((_, i) => Math.max(...all.map((l) => l[i].length)));
  const line = (l: string[]) => l.map((x, i) => (i === 0 ? x.padEnd(w[i]) : x.padStart(w[i]))).join(' | ');
  const out = [
    `Job queues: a single-step job (ours: a 1-step workflow); drain ${r.opts.drain}, one by one ${r.opts.oneByOne}, idle ${r.opts.idleJobs}; ` +
      `load average ${r.loadAverage.join(' ')} → ${r.loadAverageAtEnd?.join(' ')}`,
    line(header),
    w.map((x) => '-'.repeat(x)).join('-|-'),
    ...body.map(line),
  ];
  const yes = (ok: boolean) => (ok ? 'yes' : 'NO');
  if (ours && b) {
    out.push(
      `target "kept runs ≥ pg-boss (jobs/s)": drain ${yes(ours.drain.jobsPerSec >= b.drain.jobsPerSec)} ` +
        `(${(ours.drain.jobsPerSec / b.drain.jobsPerSec).toFixed(2)}×), one by one ${yes(ours.oneByOne.jobsPerSec >= b.oneByOne.jobsPerSec)}`,
    );
  }
  if (notKept && g) {
    out.push(
      `target "runs not kept within 1.5× of graphile-worker (drain jobs/s)": ${yes(notKept.drain.jobsPerSec * 1.5 >= g.drain.jobsPerSec)} ` +
        `(${(g.drain.jobsPerSec / notKept.drain.jobsPerSec).toFixed(2)}× behind); one by one ${yes(notKept.oneByOne.jobsPerSec * 1.5 >= g.oneByOne.jobsPerSec)}`,
    );
  }
  for (const p of r.peers) out.push(`  ${p.name}: ${JSON.stringify(p.config)}`);
  for (const [k, e] of Object.entries(r.errors)) out.push(`  ${k} FAILED: ${e.split('\n')[0]}`);
  return out.join('\n');
}

export async function runJobsBench(argv: string[]): Promise<JobsReport> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      jobs: { type: 'string', default: '20000' },
      'one-by-one': { type: 'string', default: '3000' },
      callers: { type: 'string', default: '10' },
      'idle-jobs': { type: 'string', default: '50' },
      'ours-concurrency': { type: 'string', default: String(OURS_JOB_CONCURRENCY) },
      peers: { type: 'string' },
      'pg-url': PG_URL_OPTION,
    },
  });
  const r = await runJobs({
    pgUrl: a['pg-url']!,
    drain: positiveInt('jobs', a.jobs),
    oneByOne: positiveInt('one-by-one', a['one-by-one']),
    callers: positiveInt('callers', a.callers),
    idleJobs: positiveInt('idle-jobs', a['idle-jobs']),
    oursConcurrency: positiveInt('ours-concurrency', a['ours-concurrency']),
    only: a.peers?.split(','),
    log: (m) => process.stderr.write(`${m}\n`),
  });
  process.stdout.write(renderJobs(r) + '\n');
  return r;
}
