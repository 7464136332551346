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
import { cpus, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { distribute } from '../../../libs/durable/src/store/distribution.js';
import { partitionSchema } from '../../../libs/durable/src/store/partitions.js';
import { pgSqlClient } from '../../../libs/durable/src/store/sql-client.js';
import { oneByOne } from '../callers.js';
import { peerPoolSize } from '../figures.js';
import { OursHost, SQL, WORKFLOW, addCounts, createSchema, diffCounts, type HostConfig, type StatementCounts } from '../peers/ours-lib.js';
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

const DB = 'bench_citus';
const BULK_BATCH = 1000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (m: string) => process.stderr.write(`[citus] ${m}\n`);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

interface Opts {
  workflows: number;
  e2e: number;
  partitions: number;
  nodes: number;
  processes: number;
  concurrency: number;
  callers: number;
  steps: number;
  /** Statements of each kind in the router probe (0: none). */
  probe: number;
}

interface SetupResult {
  setup: string;
  phases: PhaseFigures[];
  probe: ProbeRow[];
}

/** One set of servers: the app's database URL, its servers by role, the partition count (null: a single server). */
interface Setup {
  label: string;
  url: string;
  nodes: Array<{ role: string; node: BenchNode }>;
  partitions: number | null;
}

interface NodeFigures {
  role: string;
  cpuMsPerWf: number;
  statementsPerWf: number;
  commitsPerWf: number;
  /** Statements per workflow by partition (worker nodes), "-" for those naming none. */
  byPartition: Record<string, number>;
  byKind: Record<string, number>;
}

interface PhaseFigures {
  phase: string;
  workflows: number;
  workflowsPerSec: number;
  appCpuMsPerWf: number;
  engineStatementsPerWf: number;
  engineStatements: Record<string, number>;
  nodes: NodeFigures[];
  twoPhase?: { transactionsPerWf: number; preparedPerWf: number; multiNodePerWf: number };
  load: string;
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

/**
 * The engine's name of a statement the bench's pool counted as "other: <its first 60 characters>":
 * in distributed mode the text names the partition (durable_p3.durable_runs), the single-server text
 * does not. Several candidates: joined with "|".
 */
const flat = (t: string) => t.replace(/\s+/g, ' ').trim();
function engineName(key: string): string {
  if (!key.startsWith('other: ')) return key;
  const head = key.slice('other: '.length).replace(/durable_p\d+\./g, '');
  const names = Object.entries(SQL)
    .filter(([, text]) => flat(text).startsWith(head))
    .map(([name]) => name);
  return names.length ? names.join('|') : key;
}

function byEngineName(counts: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(counts)) out[engineName(k)] = (out[engineName(k)] ?? 0) + v;
  return out;
}

// ---- the report --------------------------------------------------------------------------------

function table(header: string[], body: string[][]): string {
  const all = [header, ...body];
  const w = header.map((_, i) => Math.max(...all.map((l) => l[i].length)));
  const line = (l: string[]) => l.map((x, i) => (i < 2 ? x.padEnd(w[i]) : x.padStart(w[i]))).join(' | ');
  return [line(header), w.map((x) => '-'.repeat(x)).join('-|-'), ...body.map(line)].join('\n');
}

function render(results: SetupResult[], o: Opts): string {
  const rows: string[][] = [];
  for (const r of results)
    for (const p of r.phases) {
      const first = (x: string, i: number) => (i === 0 ? x : '');
      const tp = p.twoPhase ? `${p.twoPhase.transactionsPerWf.toFixed(2)} (${p.twoPhase.multiNodePerWf.toFixed(2)} on 2+ nodes)` : '-';
      rows.push([
        `${r.setup} ${p.phase}`,
        'app',
        p.workflowsPerSec.toFixed(0),
        p.appCpuMsPerWf.toFixed(2),
        p.engineStatementsPerWf.toFixed(2),
        '',
        tp,
      ]);
      p.nodes.forEach((x, i) =>
        rows.push([first('', i), x.role, '', x.cpuMsPerWf.toFixed(2), x.statementsPerWf.toFixed(2), x.commitsPerWf.toFixed(2), '']),
      );
      const total = p.nodes.reduce((a, x) => a + x.cpuMsPerWf, 0);
      rows.push(['', 'all servers', '', total.toFixed(2), '', '', '']);
    }
  const header = ['set / phase', 'process', 'wf/s', 'CPU ms/wf', 'statements/wf', 'commits/wf', '2PC tx/wf'];
  const parts: string[] = [
    `Citus: ${o.steps} trivial steps per workflow; drain ${o.workflows} runs (startMany) and end-to-end ${o.e2e} runs (${o.callers} callers, one by one); ` +
      `${o.processes} worker processes × concurrency ${o.concurrency}; distributed: ${o.partitions} partitions on ${o.nodes} worker nodes; ` +
      `${cpus().length} × ${cpus()[0]?.model ?? '?'} shared by every server and the app`,
    'statements/wf: app = the engine statements sent (counted at its pool); a server = statements it executed (pg_stat_statements, no utility statements)',
    table(header, rows),
  ];
  for (const r of results)
    for (const p of r.phases)
      for (const x of p.nodes) {
        const parts2 = Object.entries(x.byPartition).sort(([a], [b]) => a.localeCompare(b, undefined, { numeric: true }));
        if (parts2.length > 1 || (parts2[0] && parts2[0][0] !== '-'))
          parts.push(
            `${r.setup} ${p.phase} ${x.role}: statements/wf by partition ${parts2.map(([k, v]) => `${k} ${v.toFixed(3)}`).join(', ')}; by kind ${Object.entries(
              x.byKind,
            )
              .map(([k, v]) => `${k} ${v.toFixed(2)}`)
              .join(', ')}`,
          );
      }
  const probes = results.flatMap((r) => r.probe.map((p) => ({ setup: r.setup, ...p })));
  if (probes.length) {
    const roles = [...new Set(probes.flatMap((p) => Object.keys(p.cpuUsPerStatement)))];
    parts.push(
      `Router probe: single-row statements by primary key on a run's partition (read: SELECT, write: UPDATE of one row), ${o.callers} connections; CPU µs per statement per server`,
      table(
        ['route', 'statement', 'statements/s', ...roles.map((r) => `${r} µs`), 'all servers µs'],
        probes.map((p) => [
          p.via,
          p.kind,
          p.statementsPerSec.toFixed(0),
          ...roles.map((r) => (p.cpuUsPerStatement[r] === undefined ? '' : p.cpuUsPerStatement[r].toFixed(0))),
          Object.values(p.cpuUsPerStatement)
            .reduce((x, y) => x + y, 0)
            .toFixed(0),
        ]),
      ),
    );
  }
  for (const r of results)
    for (const p of r.phases) {
      parts.push(
        `${r.setup} ${p.phase}: engine statements/wf ${Object.entries(p.engineStatements)
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${k} ${v.toFixed(2)}`)
          .join(', ')}` +
          (p.twoPhase
            ? `; two-phase commits ${(p.twoPhase.transactionsPerWf * p.workflows).toFixed(0)} (${p.twoPhase.preparedPerWf.toFixed(3)} prepared/wf, ${p.twoPhase.multiNodePerWf.toFixed(3)}/wf prepared on 2+ nodes)`
            : '') +
          `; load after ${p.load}`,
      );
    }
  return parts.join('\n') + '\n';
}

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
