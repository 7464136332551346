/**
 * npm start -- --workflows 1000 --steps 3 --payload 0 --concurrency 10,50 [--db-write]
 * Runs the Postgres limit, then DBOS and ours at each concurrency level on the same Postgres,
 * prints the tables (stdout) and writes results/latest.json. Progress goes to stderr.
 */
import { runBackfillBench } from './backfill-bench.js';
import { runStreamsBench } from './streams-bench.js';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { benchDbUrl, serverVersion, takeDbPrefix, withClient } from './db.js';
import { peerPoolSize, writePoolSize, type RunOpts } from './figures.js';
import { measureLimit } from './limit.js';
import { DBOS_DEFAULT_POLL_MS, dbosVersion, runDbos } from './peers/dbos.js';
import { runOurs } from './peers/ours.js';
import { withStatistics } from './autoanalyze.js';
import { runScale } from './peers/ours-scale.js';
import { renderTable, writeJson, type LevelReport, type Report } from './report.js';
import { runSchedulesBench } from './schedules.js';
import { runVerifyBench } from './verify-bench.js';
import { runTelemetryBench } from './telemetry.js';
import { runScaleRowsBench } from './scale-rows/main.js';
import { runJobs, runJobsBench } from './jobs/main.js';
import { runAwaitedBench } from './awaited.js';
import { runFanoutBench } from './fanout.js';
import { OURS_JOB_CONCURRENCY } from './jobs/ours-job.js';
import { runInstancesBench } from './instances.js';
import { runClaimsBench } from './claims-bench.js';
import { runDatabasesBench } from './databases.js';
import { runSearchBench } from './search.js';
import { PG_URL_OPTION } from './cli-args.js';

takeDbPrefix(process.argv);
// `npm run bench -- schedules …`: the schedules benchmark (its own flags; see schedules.ts).
if (process.argv[2] === 'schedules') {
  await runSchedulesBench(process.argv.slice(3));
  process.exit(0);
}
// `npm run bench -- backfill …`: Durable.backfill against a hand-written keyset loop (see backfill-bench.ts).
if (process.argv[2] === 'backfill') {
  await runBackfillBench(process.argv.slice(3));
  process.exit(0);
}
// `npm run bench -- streams …`: Durable.stream write rate and write → reader latency across processes (see streams-bench.ts).
if (process.argv[2] === 'streams') {
  await runStreamsBench(process.argv.slice(3));
  process.exit(0);
}
// `npm run bench -- verify …`: verify over many in-flight runs (its own flags; see verify-bench.ts).
if (process.argv[2] === 'verify') {
  await runVerifyBench(process.argv.slice(3));
  process.exit();
}
// `npm run bench -- scale …`: millions of finished runs: claim, admin queries, retention, bytes per run (see scale-rows/main.ts).
if (process.argv[2] === 'scale') {
  await runScaleRowsBench(process.argv.slice(3));
  process.exit(0);
}
// `npm run bench -- jobs …`: graphile-worker, pg-boss and our 1-step workflow side by side (see jobs/main.ts).
if (process.argv[2] === 'jobs') {
  await runJobsBench(process.argv.slice(3));
  process.exit(0);
}
// `npm run bench -- awaited …`: runs started and awaited in the worker's process (see awaited.ts).
if (process.argv[2] === 'awaited') {
  await runAwaitedBench(process.argv.slice(3));
  process.exit(0);
}
// `npm run bench -- fanout …`: one workflow joining N children, ours beside DBOS (see fanout.ts).
if (process.argv[2] === 'fanout') {
  await runFanoutBench(process.argv.slice(3));
  process.exit(0);
}
// `npm run bench -- instances …`: 1 → 2 → 4 → 8 worker processes on one Postgres (see instances.ts).
if (process.argv[2] === 'instances') {
  await runInstancesBench(process.argv.slice(3));
  process.exit(0);
}
// `npm run bench -- databases …`: PostgreSQL and MariaDB side by side (see databases.ts).
if (process.argv[2] === 'databases') {
  await runDatabasesBench(process.argv.slice(3));
  process.exit(0);
}
// `npm run bench -- search …`: the admin API's tag and input search on PostgreSQL and MariaDB (see search.ts).
if (process.argv[2] === 'search') {
  await runSearchBench(process.argv.slice(3));
  process.exit(0);
}
// `npm run bench -- claims …`: claim cost with flow control, plain vs limited (see claims-bench.ts).
if (process.argv[2] === 'claims') {
  await runClaimsBench(process.argv.slice(3));
  process.exit(0);
}
// `npm run bench -- citus …`: 1 node vs a Citus coordinator + worker nodes, started by the bench (see citus/main.ts).
if (process.argv[2] === 'citus') {
  const { runCitusBench } = await import('./citus/main.js');
  await runCitusBench(process.argv.slice(3));
  process.exit(0);
}
// `npm run bench -- telemetry …`: the same workload with OpenTelemetry off and on (see telemetry.ts).
if (process.argv[2] === 'telemetry') {
  await runTelemetryBench(process.argv.slice(3));
  process.exit(0);
}

const { values: a } = parseArgs({
  options: {
    workflows: { type: 'string', default: '1000' },
    steps: { type: 'string', default: '3' },
    payload: { type: 'string', default: '0' },
    concurrency: { type: 'string', default: '10,50' },
    callers: { type: 'string', default: '10' },
    'db-write': { type: 'boolean', default: false },
    processes: { type: 'string' },
    workers: { type: 'string' },
    'ours-history': { type: 'string', default: 'on' },
    'ours-poll-ms': { type: 'string' },
    'bulk-runs': { type: 'string', default: '10000' },
    'cpu-prof': { type: 'boolean', default: false },
    'ours-prepared': { type: 'boolean', default: false },
    'ours-limits': { type: 'string' },
    'skip-scale': { type: 'boolean', default: false },
    'skip-jobs': { type: 'boolean', default: false },
    'job-drain': { type: 'string', default: '20000' },
    'job-one-by-one': { type: 'string', default: '3000' },
    'job-callers': { type: 'string', default: '10' },
    'scale-finished': { type: 'string', default: '1000000' },
    'scale-waiting': { type: 'string', default: '100000' },
    'idle-runs': { type: 'string', default: '50' },
    'dbos-poll-ms': { type: 'string', default: String(DBOS_DEFAULT_POLL_MS) },
    'pg-url': PG_URL_OPTION,
    'limit-clients': { type: 'string', default: '16' },
    'limit-seconds': { type: 'string', default: '3' },
    'skip-limit': { type: 'boolean', default: false },
    'skip-dbos': { type: 'boolean', default: false },
    'skip-ours': { type: 'boolean', default: false },
    out: { type: 'string', default: fileURLToPath(new URL('../results/latest.json', import.meta.url)) },
    help: { type: 'boolean', short: 'h', default: false },
  },
});

if (a.help) {
  process.stdout.write(
    'usage: npm run bench -- [--workflows N] [--steps K] [--payload BYTES] [--concurrency C[,C2...]] [--callers 10] [--db-write]\n' +
      '       [--processes P] [--idle-runs 50] [--dbos-poll-ms 10] [--pg-url postgres://user@host:port]\n' +
      '       [--ours-history on|off] [--ours-poll-ms MS] [--bulk-runs 10000] [--cpu-prof] [--ours-prepared]\n' +
      '       [--ours-limits G[,K]]   (flow control: queue-wide limit G and per-key limit K on the bench queue)\n' +
      '       [--scale-finished 1000000] [--scale-waiting 100000] [--skip-scale]\n' +
      '       [--job-drain 20000] [--job-one-by-one 3000] [--job-callers 10] [--skip-jobs]   (graphile-worker, pg-boss, our 1-step workflow)\n' +
      '       [--limit-clients 16] [--limit-seconds 3] [--skip-limit] [--skip-dbos] [--skip-ours] [--out FILE]\n' +
      '       [--db-prefix bench]   (databases are named <prefix>_limit, <prefix>_ours, …; any sub-command too)\n' +
      '       npm run bench -- schedules --help   (10,000 schedules firing every minute: fire lag and database cost)\n' +
      '       npm run bench -- verify [--runs 100000] [--steps 5] [--broken 100] [--page-size 500]   (verify over in-flight runs)\n' +
      '       npm run bench -- jobs [--jobs 20000] [--one-by-one 3000] [--callers 10] [--idle-jobs 50] [--ours-concurrency 200]\n' +
      '       npm run bench -- scale [--finished 10000000] [--at 1000000,3000000] …   (npm run bench -- scale --help)\n' +
      '       npm run bench -- awaited [--runs 3000] [--callers 10] [--steps 3] [--rounds 3]   (runs started and awaited in the worker process)\n' +
      '       npm run bench -- fanout [--children 100000] [--dbos-children 10000] [--concurrency 50] [--skip-dbos]   (one workflow joining N children)\n' +
      '       npm run bench -- instances [--processes 1,2,4,8] [--workflows 4000] [--steps 3] [--concurrency 10] [--pool 10]\n' +
      '       npm run bench -- telemetry --help   (the same workload with OpenTelemetry off and on, side by side)\n' +
      '       npm run bench -- citus [--workflows 10000] [--e2e 3000] [--partitions 8] [--nodes 2] [--probe 20000]   (1 node vs a Citus cluster it starts)\n' +
      '       npm run bench -- claims [--backlog 100000] [--keys 10000] [--claimers 3] [--batch 10] [--seconds 10]   (claim cost: plain vs limited)\n',
  );
  process.exit(0);
}

const int = (name: string, v: string | undefined) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${v}`);
  return n;
};
const log = (m: string) => process.stderr.write(`${m}\n`);
const dbUrl = (what: string) => benchDbUrl(a['pg-url']!, what);

/** Worker concurrency levels: both peers run at each, side by side. */
const levels = a.concurrency!.split(',').map((c) => int('concurrency', c.trim()));
if (!levels.length || levels.some((c) => c < 1))
  throw new Error(`--concurrency must be one or more integers ≥ 1 separated by commas, got ${a.concurrency}`);
const base: Omit<RunOpts, 'databaseUrl'> = {
  workflows: int('workflows', a.workflows),
  steps: int('steps', a.steps),
  payloadBytes: int('payload', a.payload),
  concurrency: levels[0],
  dbWrite: a['db-write']!,
  callers: Math.max(1, int('callers', a.callers)),
};
const workers = Math.max(1, int('processes', a.processes ?? a.workers ?? '1'));
if (!['on', 'off'].includes(a['ours-history']!)) throw new Error(`--ours-history must be on or off, got ${a['ours-history']}`);
const oursHistory = a['ours-history'] === 'on';
/** --ours-limits G[,K]: cluster-wide limits on the bench queue (the flow-controlled claim path). */
const oursLimits = a['ours-limits']
  ? (([g, k]) => ({ globalConcurrency: int('ours-limits', g), keyConcurrency: k === undefined ? null : int('ours-limits', k) }))(
      a['ours-limits'].split(','),
    )
  : undefined;
const oursPollMs = a['ours-poll-ms'] === undefined ? undefined : int('ours-poll-ms', a['ours-poll-ms']);
const bulkRuns = int('bulk-runs', a['bulk-runs']);
const cpuProfDir = a['cpu-prof'] ? fileURLToPath(new URL('../results/cpu-prof', import.meta.url)) : undefined;
const idleRuns = int('idle-runs', a['idle-runs']);
const pollMs = int('dbos-poll-ms', a['dbos-poll-ms']);

const report: Report = {
  meta: {
    date: new Date().toISOString(),
    command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
    loadAverage: loadavg().map((x) => Number(x.toFixed(2))),
    workload: { ...base, concurrency: levels, processes: workers, idleRuns },
    node: process.version,
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memGiB: Math.round(totalmem() / 2 ** 30),
    postgres: await serverVersion(dbUrl('limit')),
    dbos: { version: dbosVersion(), queueMinPollingIntervalMs: pollMs },
  },
  levels: [],
};

await warnAboutConnections();

const t0 = performance.now();
if (!a['skip-limit']) {
  log(`[limit] single-row INSERT commit rate, ${a['limit-clients']} clients, ${a['limit-seconds']} s`);
  report.limit = await measureLimit({
    databaseUrl: dbUrl('limit'),
    clients: int('limit-clients', a['limit-clients']),
    seconds: int('limit-seconds', a['limit-seconds']),
  });
}

for (const concurrency of levels) {
  const level: LevelReport = { concurrency };
  report.levels.push(level);
  const at = levels.length > 1 ? ` c${concurrency}` : '';
  if (!a['skip-dbos']) {
    try {
      const { result, note } = await withStatistics(dbUrl('dbos'), () =>
        runDbos({
          ...base,
          concurrency,
          databaseUrl: dbUrl('dbos'),
          pollIntervalMs: pollMs,
          idleRuns,
          log: (m) => log(`[dbos${at}] ${m}`),
        }),
      );
      if (note) result.notes.push(note);
      level.dbos = result;
    } catch (e) {
      level.dbosError = (e as Error).stack ?? String(e);
      log(`[dbos${at}] FAILED: ${level.dbosError}`);
    }
  }
  if (!a['skip-ours']) {
    try {
      const { result: r, note } = await withStatistics(dbUrl('ours'), () =>
        runOurs({
          ...base,
          concurrency,
          databaseUrl: dbUrl('ours'),
          workers,
          idleRuns,
          history: oursHistory,
          pollIntervalMs: oursPollMs,
          bulkRuns,
          cpuProfDir,
          prepared: a['ours-prepared'],
          limits: oursLimits,
          log: (m) => log(`[ours${at}] ${m}`),
        }),
      );
      if (note) r.figures.notes.push(note);
      level.ours = r.figures;
      level.oursDetail = r.detail;
    } catch (e) {
      level.oursError = (e as Error).stack ?? String(e);
      log(`[ours${at}] ${level.oursError}`);
    }
  }
}

if (!a['skip-jobs']) {
  try {
    report.jobs = await runJobs({
      pgUrl: a['pg-url']!,
      drain: int('job-drain', a['job-drain']),
      oneByOne: int('job-one-by-one', a['job-one-by-one']),
      callers: int('job-callers', a['job-callers']),
      idleJobs: idleRuns,
      oursConcurrency: OURS_JOB_CONCURRENCY,
      log,
    });
  } catch (e) {
    report.jobsError = (e as Error).stack ?? String(e);
    log(`[jobs] ${report.jobsError}`);
  }
}

if (!a['skip-scale']) {
  try {
    report.scale = await runScale({
      databaseUrl: dbUrl('ours_scale'),
      workflows: base.workflows,
      steps: base.steps,
      concurrency: base.concurrency,
      processes: workers,
      history: oursHistory,
      pollIntervalMs: oursPollMs,
      finished: int('scale-finished', a['scale-finished']),
      waiting: int('scale-waiting', a['scale-waiting']),
      log: (m) => log(`[scale] ${m}`),
    });
  } catch (e) {
    report.scaleError = (e as Error).stack ?? String(e);
    log(`[scale] ${report.scaleError}`);
  }
}

report.meta.durationS = Math.round((performance.now() - t0) / 1000);
process.stdout.write(
  `\nnestjs-durable bench: ${base.workflows} workflows x ${base.steps} steps, payload ${base.payloadBytes} B, ` +
    `concurrency ${levels.join(' and ')}${base.dbWrite ? ', db write per step' : ''}; ` +
    `${report.meta.cpus} x ${report.meta.cpuModel}, Node ${report.meta.node}, PostgreSQL ${report.meta.postgres}\n\n`,
);
report.meta.loadAverageAtEnd = loadavg().map((x) => Number(x.toFixed(2)));
process.stdout.write(renderTable(report) + '\n');
writeJson(a.out!, report);
log(`\nwrote ${a.out}`);
process.exit(0);

/**
 * Both peers size their pools from --concurrency (and ours per process): warn up front when that
 * could exceed what the server allows, rather than let a peer fail later with "too many clients".
 */
async function warnAboutConnections(): Promise<void> {
  const top = Math.max(...levels);
  const enginePool = peerPoolSize(top);
  const writes = base.dbWrite ? writePoolSize(top) : 0;
  const ours = workers * (enginePool + 1 + writes) + (workers > 1 ? enginePool : 0);
  const dbos = enginePool + writes + 2;
  const need = Math.max(a['skip-ours'] ? 0 : ours, a['skip-dbos'] ? 0 : dbos);
  const free = await withClient(`${a['pg-url']!.replace(/\/+$/, '')}/postgres`, async (c) => {
    const { rows } = await c.query<{ free: number }>(
      `SELECT current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend')::int AS free`,
    );
    return rows[0].free;
  });
  if (need > free) {
    log(
      `WARNING: this run may open up to ${need} connections at once (pools sized from --concurrency ${top}` +
        `${workers > 1 ? ` × ${workers} processes` : ''}${base.dbWrite ? ', plus the --db-write pools' : ''}), but the server has ${free} free. ` +
        'A peer that runs out fails with "too many clients": lower --concurrency or --processes, or raise max_connections.',
    );
  }
}
