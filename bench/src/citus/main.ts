/**
 * npm start -- citus [--workflows 10000] [--e2e 3000] [--partitions 8] [--nodes 2] [--processes 2] [--concurrency 20] [--callers 20]
 *                    [--probe 20000] [--only single|cluster]
 *
 * The "ours" workload (3 trivial steps per workflow) on servers this benchmark starts for itself, one
 * set after the other, with the same settings: (a) one plain PostgreSQL server, (b) a Citus cluster
 * of a coordinator and `nodes` worker nodes, the database in distributed mode over `partitions`
 * partitions (the app's URL is the coordinator's). The same engine code, the same worker processes.
 *
 * Per set, after a warm-up, two measured phases with P worker processes (forked) running:
 *   drain:      `workflows` runs started in bulk (startMany, batches of 1000) from this process,
 *               drained by the workers; workflows/s = N ÷ (first started_at → last finished_at).
 *   end-to-end: `e2e` runs started one by one by `callers` concurrent callers in this process
 *               (an engine with worker: false) while the workers run; N ÷ (first created → last finished).
 * Then (--probe) the router probe: the CPU of one routed single-row statement per server (router-probe.ts).
 * Per phase and server: CPU ms per workflow of the server's whole process tree (postmaster and every
 * child, exited ones included), statements it executed per workflow (pg_stat_statements, utility
 * statements left out; per partition on the worker nodes), commits per workflow (pg_stat_database),
 * and on the coordinator the two-phase commits (pg_dist_transaction). Plus the app processes' CPU
 * per workflow and the engine's statements per workflow counted at its pool.
 *
 * On one machine every server and the app share its cores: the figures are CPU costs, not what a
 * cluster of separate machines would reach.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { distribute } from '../../../libs/durable/src/store/distribution.js';
import { partitionSchema } from '../../../libs/durable/src/store/partitions.js';
import { pgSqlClient } from '../../../libs/durable/src/store/sql-client.js';
import { oneByOne } from '../callers.js';
import { peerPoolSize } from '../figures.js';
import { OursHost, WORKFLOW, addCounts, createSchema, diffCounts, type HostConfig, type StatementCounts } from '../peers/ours-lib.js';
import { startChildWorkers, type WorkerSet } from '../peers/ours-workers.js';
import { guardStall } from '../stall.js';
import {
  installStatementCounting,
  readCommits,
  readStatements,
  readTwoPhase,
  resetStatements,
  serverCpuMs,
  type StatementTally,
} from './measure.js';
import { routerProbe, type ProbeRow } from './router-probe.js';
import { BenchServers, citusInstalled, sql, type BenchNode } from './servers.js';
import { byEngineName, render, type Opts, type PhaseFigures, type SetupResult } from './report.js';

const DB = 'bench_citus';
const BULK_BATCH = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (m: string) => process.stderr.write(`[citus] ${m}\n`);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

/** One set of servers: the app's database URL, its servers by role, the partition count (null: a single server). */
interface Setup {
  label: string;
  url: string;
  nodes: Array<{ role: string; node: BenchNode }>;
  partitions: number | null;
}

const cpuMsNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** FROM clause over every run of the database (the partitions' tables in distributed mode). */
const allRuns = (partitions: number | null) =>
  partitions === null
    ? 'durable_runs'
    : `(${Array.from({ length: partitions }, (_, k) => `SELECT * FROM ${partitionSchema(k)}.durable_runs`).join(' UNION ALL ')}) r`;

async function statusOf(s: Setup): Promise<string> {
  const rows = await sql<{ status: string; n: number }>(
    s.url,
    `SELECT status, count(*)::int AS n FROM ${allRuns(s.partitions)} GROUP BY status ORDER BY status`,
  );
  return `runs by status: ${rows.map((r) => `${r.status} ${r.n}`).join(', ')}`;
}

async function wallSeconds(s: Setup, prefix: string, from: 'created_at' | 'started_at', n: number): Promise<number> {
  const [row] = await sql<{ n: number; bad: number; s: number }>(
    s.url,
    `SELECT count(*)::int AS n, count(*) FILTER (WHERE status <> 'SUCCEEDED')::int AS bad,
            extract(epoch FROM max(finished_at) - min(${from}))::float8 AS s
       FROM ${allRuns(s.partitions)} WHERE id LIKE $1`,
    [`${prefix}%`],
  );
  if (row.n !== n || row.bad) log(`WARNING: ${prefix}: ${row.n} runs of ${n}, ${row.bad} not SUCCEEDED`);
  return Number(row.s);
}

/** Creates the database on every server; on a cluster: Citus, the nodes, the migration, distributed mode. */
async function prepare(s: Setup): Promise<void> {
  for (const { node } of s.nodes) {
    await installStatementCounting(node);
    await sql(node.url(), `CREATE DATABASE ${DB}`);
    if (s.partitions !== null) await sql(node.url(DB), 'CREATE EXTENSION citus');
  }
  if (s.partitions !== null) {
    const coord = s.nodes[0].node;
    await sql(s.url, `SELECT citus_set_coordinator_host('127.0.0.1', ${coord.port})`);
    for (const { node } of s.nodes.slice(1)) await sql(s.url, `SELECT citus_add_node('127.0.0.1', ${node.port})`);
  }
  await createSchema(s.url);
  if (s.partitions !== null) {
    const c = new pg.Client({ connectionString: s.url });
    await c.connect();
    try {
      await distribute(pgSqlClient(c, { prepared: false }), s.partitions);
    } finally {
      await c.end();
    }
    const placed = await sql<{ port: number; n: number }>(
      s.url,
      `SELECT nodeport AS port, count(*)::int AS n FROM citus_shards WHERE table_name::text LIKE '%.durable_runs' GROUP BY 1 ORDER BY 1`,
    );
    const byPort = new Map(s.nodes.map(({ role, node }) => [node.port, role]));
    log(`partitions per node: ${placed.map((p) => `${byPort.get(Number(p.port)) ?? p.port} ${p.n}`).join(', ')}`);
  }
}

/** Runs `work` (which makes `n` runs finish) as a measured phase. */
async function measure(
  s: Setup,
  phase: string,
  n: number,
  ws: WorkerSet,
  client: OursHost,
  work: () => Promise<void>,
  wall: () => Promise<number>,
): Promise<PhaseFigures> {
  await sleep(1500); // counters of the sessions flushed (at most once a second)
  for (const { node } of s.nodes) await resetStatements(node);
  const commits0 = await Promise.all(s.nodes.map(({ node }) => readCommits(node, DB)));
  const twoPhase0 = s.partitions !== null ? await readTwoPhase(s.nodes[0].node, DB) : undefined;
  const snap0 = await ws.snap();
  const client0: StatementCounts = { ...client.counts };
  const self0 = cpuMsNow();
  const cpu0 = s.nodes.map(({ node }) => serverCpuMs(node.pid));
  const target = ws.done.n + n;
  await guardStall(
    `${s.label} ${phase}`,
    Promise.all([work(), ws.done.until(target, log)]),
    () => ws.done.n,
    () => statusOf(s),
  );
  const cpu1 = s.nodes.map(({ node }) => serverCpuMs(node.pid));
  const self1 = cpuMsNow();
  const snap1 = await ws.snap();
  await sleep(1500);
  const commits1 = await Promise.all(s.nodes.map(({ node }) => readCommits(node, DB)));
  const tallies: StatementTally[] = await Promise.all(s.nodes.map(({ node }) => readStatements(node, DB)));
  const twoPhase1 = s.partitions !== null ? await readTwoPhase(s.nodes[0].node, DB) : undefined;
  const counts = addCounts(diffCounts(snap1.counts, snap0.counts), diffCounts(client.counts, client0));
  const perWf = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v / n]));
  const wps = n / (await wall());
  const fig: PhaseFigures = {
    phase,
    workflows: n,
    workflowsPerSec: wps,
    appCpuMsPerWf: (self1 - self0 + snap1.cpuMs - snap0.cpuMs) / n,
    engineStatementsPerWf: Object.values(counts).reduce((a, b) => a + b, 0) / n,
    engineStatements: perWf(byEngineName(counts)),
    nodes: s.nodes.map(({ role }, i) => ({
      role,
      cpuMsPerWf: (cpu1[i] - cpu0[i]) / n,
      statementsPerWf: tallies[i].total / n,
      commitsPerWf: (commits1[i] - commits0[i]) / n,
      byPartition: perWf(tallies[i].byPartition),
      byKind: perWf(tallies[i].byKind),
    })),
    ...(twoPhase0 && twoPhase1
      ? {
          twoPhase: {
            transactionsPerWf: (twoPhase1.transactions - twoPhase0.transactions) / n,
            preparedPerWf: (twoPhase1.prepared - twoPhase0.prepared) / n,
            multiNodePerWf: (twoPhase1.multiNode - twoPhase0.multiNode) / n,
          },
        }
      : {}),
    load: load(),
  };
  log(
    `  ${phase}: ${wps.toFixed(0)} wf/s; CPU ms/wf ${fig.nodes.map((x) => `${x.role} ${x.cpuMsPerWf.toFixed(2)}`).join(', ')}, app ${fig.appCpuMsPerWf.toFixed(2)}; load ${fig.load}`,
  );
  return fig;
}

/** The workload on one set of servers: warm-up, drain, end-to-end. */
async function runOn(s: Setup, o: Opts): Promise<SetupResult> {
  log(`${s.label}: preparing ${DB} (load ${load()})`);
  await prepare(s);
  const cfg: HostConfig = {
    url: s.url,
    steps: o.steps,
    concurrency: o.concurrency,
    dbWrite: false,
    worker: true,
    history: true,
    poolSize: peerPoolSize(o.concurrency),
    logWarnings: true,
  };
  const ws = await startChildWorkers(cfg, o.processes);
  const client = new OursHost({ ...cfg, worker: false, logWarnings: true });
  await client.start();
  const out: PhaseFigures[] = [];
  try {
    const warm = 200;
    log(`${s.label}: warm-up, ${warm} runs`);
    await client.engine.startMany(items('warm-', 0, warm));
    await guardStall(
      `${s.label} warm-up`,
      ws.done.until(warm),
      () => ws.done.n,
      () => statusOf(s),
    );
    log(`${s.label}: drain, ${o.workflows} runs started in bulk while ${o.processes} worker processes run`);
    out.push(
      await measure(
        s,
        'drain',
        o.workflows,
        ws,
        client,
        async () => {
          for (let i = 0; i < o.workflows; i += BULK_BATCH)
            await client.engine.startMany(items('drain-', i, Math.min(o.workflows, i + BULK_BATCH)));
        },
        () => wallSeconds(s, 'drain-', 'started_at', o.workflows),
      ),
    );
    if (o.e2e > 0) {
      log(`${s.label}: end-to-end, ${o.e2e} runs started one by one by ${o.callers} callers`);
      out.push(
        await measure(
          s,
          'end-to-end',
          o.e2e,
          ws,
          client,
          () => oneByOne(o.e2e, o.callers, (i) => client.engine.startRun(WORKFLOW, '', { id: `e2e-${i}` })),
          () => wallSeconds(s, 'e2e-', 'created_at', o.e2e),
        ),
      );
    }
  } finally {
    await client.stop();
    await ws.stop();
  }
  let probe: ProbeRow[] = [];
  if (o.probe > 0) {
    log(`${s.label}: router probe, ${o.probe} single-row statements of each kind by ${o.callers} connections`);
    const ids = Array.from({ length: o.workflows }, (_, i) => `drain-${i}`);
    probe = await routerProbe({ db: DB, nodes: s.nodes, partitions: s.partitions }, ids, o.probe, o.callers);
    for (const r of probe)
      log(
        `  ${r.via} ${r.kind}: ${r.statementsPerSec.toFixed(0)}/s; CPU µs/statement ${Object.entries(r.cpuUsPerStatement)
          .map(([k, v]) => `${k} ${v.toFixed(0)}`)
          .join(', ')}`,
      );
  }
  return { setup: s.label, phases: out, probe };
}

const items = (prefix: string, from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => ({ workflow: WORKFLOW, input: '', options: { id: `${prefix}${from + i}` } }));

export async function runCitusBench(argv: string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      workflows: { type: 'string', default: '10000' },
      e2e: { type: 'string', default: '3000' },
      partitions: { type: 'string', default: '8' },
      nodes: { type: 'string', default: '2' },
      processes: { type: 'string', default: '2' },
      concurrency: { type: 'string', default: '20' },
      callers: { type: 'string', default: '20' },
      steps: { type: 'string', default: '3' },
      probe: { type: 'string', default: '20000' },
      only: { type: 'string' },
      out: { type: 'string', default: fileURLToPath(new URL('../../results/citus.json', import.meta.url)) },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (a.help) {
    process.stdout.write(
      'usage: npm start -- citus [--workflows 10000] [--e2e 3000] [--partitions 8] [--nodes 2] [--processes 2] [--concurrency 20]\n' +
        '                          [--callers 20] [--steps 3] [--probe 20000] [--only single|cluster] [--out results/citus.json]\n',
    );
    return;
  }
  const int = (name: string, v: string | undefined, min = 1) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}, got ${v}`);
    return n;
  };
  const o: Opts = {
    workflows: int('workflows', a.workflows),
    e2e: int('e2e', a.e2e, 0),
    partitions: int('partitions', a.partitions),
    nodes: int('nodes', a.nodes),
    processes: int('processes', a.processes),
    concurrency: int('concurrency', a.concurrency),
    callers: int('callers', a.callers),
    steps: int('steps', a.steps, 0),
    probe: int('probe', a.probe, 0),
  };
  if (a.only && !['single', 'cluster'].includes(a.only)) throw new Error(`--only must be single or cluster, got ${a.only}`);
  if (!citusInstalled()) throw new Error('Citus is not installed into the machine PostgreSQL (citus.so missing)');
  const loadAtStart = load();
  const results: SetupResult[] = [];
  if (a.only !== 'cluster') {
    const servers = BenchServers.create();
    try {
      const single = await servers.start('single', false);
      results.push(await runOn({ label: '1 node', url: single.url(DB), nodes: [{ role: 'single', node: single }], partitions: null }, o));
    } finally {
      await servers.stop();
    }
  }
  if (a.only !== 'single') {
    const servers = BenchServers.create();
    try {
      const coordinator = await servers.start('coordinator', true);
      const workers: BenchNode[] = [];
      for (let i = 1; i <= o.nodes; i++) workers.push(await servers.start(`worker${i}`, true));
      const label = `coordinator + ${o.nodes}`;
      const nodes = [{ role: 'coordinator', node: coordinator }, ...workers.map((node) => ({ role: node.name, node }))];
      results.push(await runOn({ label, url: coordinator.url(DB), nodes, partitions: o.partitions }, o));
    } finally {
      await servers.stop();
    }
  }
  const text = render(results, o) + `load average (1, 5, 15 min): ${loadAtStart} at start, ${load()} at end\n`;
  process.stdout.write('\n' + text);
  mkdirSync(dirname(a.out!), { recursive: true });
  writeFileSync(a.out!, JSON.stringify({ date: new Date().toISOString(), opts: o, loadAtStart, loadAtEnd: load(), results }, null, 2));
  log(`wrote ${a.out}`);
}
