// `npm run chaos [-- flags]`: the fault-tolerance run (not part of `npm test`). See --help.
import { parseArgs } from 'node:util';
import { chaosSettings, type ChaosSettings } from './chaos-config.js';
import { runChaos } from './chaos-run.js';
import type { ChaosReport } from './chaos-report.js';

const HELP = `npm run chaos -- [failover] [flags]
  failover                 a failover instead of a restart: the run gets its own primary and streaming
                           standby (PostgreSQL binaries of this machine, free ports, removed afterwards),
                           the workers connect with a two-host URL, and mid-run the primary's postmaster
                           is SIGKILLed and the standby promoted; 1200 runs unless -M says otherwise
  --async                  failover with asynchronous replication (default synchronous): what the
                           failover lost is reported, not a violation
  --promote-after <ms>     failover: time between the kill and the promotion (default 1000)
  --database <db>          postgres (default) or mariadb: the same run and judge on MariaDB; its
                           restart outage shuts the machine's server down and starts it with mariadbd-safe
  --citus                  distributed mode on a Citus cluster of its own (a coordinator and 2 worker
                           nodes: the PostgreSQL binaries of this machine with Citus, free ports, removed
                           afterwards), the workers on the coordinator; the outage is a shard move (the
                           busiest partition moves to the other worker node, its runs in flight); 400
                           runs, concurrency 5 and lease 5000 ms unless said otherwise
  --partitions <k>         --citus: partitions of the distributed database (default 6)
  -P, --workers <n>        worker processes (default 3)
  -M, --runs <n>           runs of 5 steps + a child (default 2000)
  --duration <s>           the driver makes trouble for at most this long (default 60)
  --kill-every <s>         mean seconds between SIGKILLs, 0 = none (default 4)
  --zombies <n>            workers frozen past their lease, then continued (default 1)
  --no-pg-restart          no database outage mid-run
  --outage <kind>          restart (default: pg_ctlcluster restart), proxy (cut only the workers'
                           connections for --outage-ms, default 3000, through a TCP proxy), failover
                           (as the positional argument), none
  --slot-runs <n>          flow control: runs with a concurrency key (8 keys) in a queue limited to 6 at
                           once and 2 per key, started with the others (default runs / 10; 0 = none);
                           as many runs in a queue limited to 10 starts per 2 s; and n / 5 runs that
                           each start, from one step, 20 rounds of 3 singleton runs (4 dedupe keys)
                           and 3 debounced runs (4 keys, 400 ms, at most 1.5 s) at once
  --concurrency <n>        runs at once per worker (default 10, --citus 5)
  --lease-ms <ms>          lease (default 3000, --citus 5000); --sweep-ms <ms> sweeper interval (default 500)
  --undo-every <n>         every n-th run fails on purpose at its end and compensates its steps
                           (default 5; 0 = none)
  --seed <n>               workload and victims (default 42)
  --keep-db                keep the database afterwards (it is kept anyway when something is wrong)
Postgres: TEST_PG_URL (default postgresql://postgres@127.0.0.1:5432); the restart runs
pg_ctlcluster --skip-systemctl-redirect <version> main restart (needs the rights to).`;

const { values: a, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    async: { type: 'boolean' },
    database: { type: 'string' },
    citus: { type: 'boolean' },
    partitions: { type: 'string' },
    'promote-after': { type: 'string' },
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
if (positionals.some((p) => p !== 'failover')) throw new Error(`unknown argument ${positionals.join(' ')} (see --help)`);
const failover = positionals[0] === 'failover' || a.outage === 'failover';
if (a.database !== undefined && !['postgres', 'mariadb'].includes(a.database))
  throw new Error(`--database must be postgres or mariadb (got ${a.database})`);
if (a.citus && (a.database !== undefined || failover)) throw new Error('--citus goes with neither --database nor failover');
if (a.partitions !== undefined && !a.citus) throw new Error('--partitions goes with --citus');
const database = (a.citus ? 'citus' : (a.database ?? 'postgres')) as ChaosSettings['database'];
const settings: ChaosSettings = chaosSettings({
  database,
  partitions: num(a.partitions, 'partitions'),
  workers: num(a.workers, 'workers'),
  runs: num(a.runs, 'runs') ?? (failover ? 1_200 : a.citus ? 400 : undefined),
  replication: a.async ? 'async' : undefined,
  promoteAfterMs: num(a['promote-after'], 'promote-after'),
  durationS: num(a.duration, 'duration'),
  killEveryS: num(a['kill-every'], 'kill-every'),
  zombies: num(a.zombies, 'zombies'),
  outage: failover ? 'failover' : a['no-pg-restart'] ? 'none' : (a.outage as ChaosSettings['outage'] | undefined),
  outageMs: num(a['outage-ms'], 'outage-ms'),
  concurrency: num(a.concurrency, 'concurrency'),
  slotRuns: num(a['slot-runs'], 'slot-runs'),
  leaseMs: num(a['lease-ms'], 'lease-ms'),
  sweepMs: num(a['sweep-ms'], 'sweep-ms'),
  seed: num(a.seed, 'seed'),
  undoEvery: num(a['undo-every'], 'undo-every'),
});

const dbName = `durable_chaos_${process.pid}`;
if (failover) await failoverRun();
else if (database === 'citus') await citusRun();
else if (database === 'mariadb') await mariaDbRun();
else await serverRun();

/** On the machine's Postgres (TEST_PG_URL): a database of its own, migrated like the test template (test/support/global-setup.ts builds it). */
async function serverRun(): Promise<never> {
  const setup = await import('../support/global-setup.js');
  await setup.buildTemplate(dbName);
  console.log(`database ${dbName} (${setup.urlFor(dbName)})`);
  let failed = true;
  try {
    failed = report(await runChaos(settings, setup.urlFor(dbName)));
  } catch (err) {
    console.error('chaos run aborted:', err);
  } finally {
    if (failed || a['keep-db']) console.log(`database kept for inspection: psql ${setup.urlFor(dbName)}`);
    else await setup.adminQuery(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
  }
  process.exit(failed ? 1 : 0);
}

/**
 * On the machine's MariaDB (a database of its own, from schema.mysql.sql), judged on a Postgres
 * copy of its rows (chaos-db.ts), for which the Postgres template is built too.
 */
async function mariaDbRun(): Promise<never> {
  const setup = await import('../support/global-setup.js');
  await setup.buildTemplate();
  const { createMariaTestDatabase } = await import('../support/mariadb.js');
  const db = await createMariaTestDatabase('chaos');
  console.log(`database ${db.name} (${db.url})`);
  let failed = true;
  try {
    failed = report(await runChaos(settings, db.url));
  } catch (err) {
    console.error('chaos run aborted:', err);
  } finally {
    if (failed || a['keep-db']) console.log(`database kept for inspection: mariadb ${db.name}`);
    else await db.drop().catch(() => {});
    await setup.adminQuery(`DROP DATABASE IF EXISTS ${setup.TEMPLATE_DB} WITH (FORCE)`).catch(() => {});
  }
  process.exit(failed ? 1 : 0);
}

/** On a primary and a standby of its own, removed at the end. */
async function failoverRun(): Promise<never> {
  const { PgCluster } = await import('../support/pg-cluster.js');
  const { FailoverOutage, prepareClusterDatabase } = await import('./chaos-failover.js');
  let failed = true;
  const cluster = await PgCluster.start({ synchronous: settings.replication === 'sync', log: console.log });
  try {
    const url = await prepareClusterDatabase(cluster, dbName);
    console.log(
      `primary :${cluster.primary.port}, standby :${cluster.standby.port} (${settings.replication} replication); workers use ${url}`,
    );
    const outage = new FailoverOutage(cluster, dbName, settings.replication, settings.promoteAfterMs, console.log);
    failed = report(await runChaos(settings, url, console.log, outage));
  } catch (err) {
    console.error('chaos run aborted:', err);
  } finally {
    if (failed || a['keep-db']) {
      cluster.keep();
      console.log(
        `servers kept for inspection: psql ${cluster.standby.url(dbName)} (the new primary); ${cluster.dir} holds both; kill ${cluster.standbyPid() ?? '?'} to stop it`,
      );
    } else await cluster.stop();
  }
  process.exit(failed ? 1 : 0);
}

/** On a Citus cluster of its own (a coordinator and 2 worker nodes), removed at the end. */
async function citusRun(): Promise<never> {
  // test/support/citus-cluster.ts defines a jest describe() when it loads: outside jest, a stand-in.
  (globalThis as { describe?: unknown }).describe ??= Object.assign(() => undefined, { skip: () => undefined });
  const { CitusCluster } = await import('../support/citus-cluster.js');
  const { ShardMoveOutage } = await import('./chaos-citus.js');
  let failed = true;
  const cluster = await CitusCluster.start();
  try {
    const db = await cluster.database(dbName, settings.partitions);
    console.log(
      `Citus coordinator :${cluster.coordinator.port}, worker nodes ${cluster.workers.map((w) => `:${w.port}`).join(', ')}; ` +
        `${settings.partitions} partitions; workers use ${db.url}`,
    );
    const move = new ShardMoveOutage(cluster, db.url, settings.partitions, console.log);
    failed = report(await runChaos(settings, db.url, console.log, undefined, settings.outage === 'shard-move' ? move : undefined));
  } catch (err) {
    console.error('chaos run aborted:', err);
  } finally {
    if (failed) for (const n of [cluster.coordinator, ...cluster.workers]) console.log(`server log :${n.port}:\n${cluster.logTail(n, 20)}`);
    // The servers die with this process (citus-cluster.ts): nothing can be kept for inspection.
    await cluster.stop();
  }
  process.exit(failed ? 1 : 0);
}

/** Prints the report; true when something is wrong. */
function report(r: ChaosReport): boolean {
  console.log('\n=== chaos report ===');
  for (const line of r.lines) console.log(line);
  for (const w of r.warnings) console.log(`WARNING: ${w}`);
  if (r.violations.length) {
    console.log(`\n${r.violations.length} VIOLATION(S):`);
    for (const v of r.violations) console.log(`  ✗ ${v}`);
  } else console.log('\nOK: no violation');
  return r.violations.length > 0;
}
