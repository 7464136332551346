// `npm run chaos [-- flags]`: the fault-tolerance run (not part of `npm test`). See --help.
import { parseArgs } from 'node:util';
import { chaosSettings, type ChaosSettings } from './chaos-config.js';
import { runChaos } from './chaos-run.js';

const HELP = `npm run chaos -- [flags]
  -P, --workers <n>        worker processes (default 3)
  -M, --runs <n>           runs of 5 steps + a child (default 2000)
  --duration <s>           the driver makes trouble for at most this long (default 60)
  --kill-every <s>         mean seconds between SIGKILLs, 0 = none (default 4)
  --zombies <n>            workers frozen past their lease, then continued (default 1)
  --no-pg-restart          no database outage mid-run
  --outage <kind>          restart (default: pg_ctlcluster restart), proxy (cut only the workers'
                           connections for --outage-ms, default 3000, through a TCP proxy), none
  --slot-runs <n>          flow control: runs with a concurrency key (8 keys) in a queue limited to 6 at
                           once and 2 per key, started with the others (default runs / 10; 0 = none);
                           as many runs in a queue limited to 10 starts per 2 s; and n / 5 runs that
                           each start, from one step, 20 rounds of 3 singleton runs (4 dedupe keys)
                           and 3 debounced runs (4 keys, 400 ms, at most 1.5 s) at once
  --concurrency <n>        runs at once per worker (default 10)
  --lease-ms <ms>          lease (default 3000); --sweep-ms <ms> sweeper interval (default 500)
  --undo-every <n>         every n-th run fails on purpose at its end and compensates its steps
                           (default 5; 0 = none)
  --seed <n>               workload and victims (default 42)
  --keep-db                keep the database afterwards (it is kept anyway when something is wrong)
Postgres: TEST_PG_URL (default postgresql://postgres@127.0.0.1:5432); the restart runs
pg_ctlcluster --skip-systemctl-redirect <version> main restart (needs the rights to).`;

const { values: a } = parseArgs({
  options: {
    workers: { type: 'string', short: 'P' },
    runs: { type: 'string', short: 'M' },
    duration: { type: 'string' },
    'kill-every': { type: 'string' },
    zombies: { type: 'string' },
    'no-pg-restart': { type: 'boolean' },
    outage: { type: 'string' },
    'outage-ms': { type: 'string' },
    concurrency: { type: 'string' },
    'slot-runs': { type: 'string' },
    'lease-ms': { type: 'string' },
    'sweep-ms': { type: 'string' },
    seed: { type: 'string' },
    'undo-every': { type: 'string' },
    'keep-db': { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (a.help) {
  console.log(HELP);
  process.exit(0);
}
const num = (v: string | undefined, flag: string): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${flag} must be a number ≥ 0 (got ${v})`);
  return n;
};
const settings: ChaosSettings = chaosSettings({
  workers: num(a.workers, 'workers'),
  runs: num(a.runs, 'runs'),
  durationS: num(a.duration, 'duration'),
  killEveryS: num(a['kill-every'], 'kill-every'),
  zombies: num(a.zombies, 'zombies'),
  outage: a['no-pg-restart'] ? 'none' : (a.outage as ChaosSettings['outage'] | undefined),
  outageMs: num(a['outage-ms'], 'outage-ms'),
  concurrency: num(a.concurrency, 'concurrency'),
  slotRuns: num(a['slot-runs'], 'slot-runs'),
  leaseMs: num(a['lease-ms'], 'lease-ms'),
  sweepMs: num(a['sweep-ms'], 'sweep-ms'),
  seed: num(a.seed, 'seed'),
  undoEvery: num(a['undo-every'], 'undo-every'),
});

// A database of its own, migrated like the test template (test/support/global-setup.ts builds it).
const dbName = `durable_chaos_${process.pid}`;
process.env.DURABLE_TEST_TEMPLATE = dbName;
const setup = await import('../support/global-setup.js');
await setup.buildTemplate();
console.log(`database ${dbName} (${setup.urlFor(dbName)})`);

let failed = true;
try {
  const report = await runChaos(settings, setup.urlFor(dbName));
  console.log('\n=== chaos report ===');
  for (const line of report.lines) console.log(line);
  for (const w of report.warnings) console.log(`WARNING: ${w}`);
  if (report.violations.length) {
    console.log(`\n${report.violations.length} VIOLATION(S):`);
    for (const v of report.violations) console.log(`  ✗ ${v}`);
  } else console.log('\nOK: no violation');
  failed = report.violations.length > 0;
} catch (err) {
  console.error('chaos run aborted:', err);
} finally {
  if (failed || a['keep-db']) console.log(`database kept for inspection: psql ${setup.urlFor(dbName)}`);
  else await setup.adminQuery(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
}
process.exit(failed ? 1 : 0);
