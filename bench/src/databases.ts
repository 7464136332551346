/**
 * `npm run bench -- databases [--workflows 2000] [--concurrency 50] [--rounds 2] [--latency-runs 100]`:
 * the engine on PostgreSQL and on MariaDB side by side in one run, alternating (round by round), with
 * the same shapes: 3 steps without payload, and 10 steps with a 1 KB input. For each: the drain
 * (runs enqueued first, then a worker starts), starts one by one in the worker's process (10
 * callers, each awaiting its run), start → first claim across engines (a client engine starts, a
 * worker engine claims: LISTEN/NOTIFY on Postgres, the poll on MariaDB, at the default
 * pollIntervalMs and at 100 ms), and what an idle worker costs the server (statements per second).
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import { createConnection } from 'mariadb';
import { Durable, DurableEngine, WorkflowRegistry } from 'nestjs-durable/engine';
import { benchDbUrl, recreateDatabase, dropDatabase, withClient } from './db.js';
import { createSchema } from './peers/ours-lib.js';
import { oneByOne } from './callers.js';
import { percentiles } from './stats.js';

type Db = 'postgres' | 'mariadb';
interface Shape {
  steps: number;
  payload: number;
}
interface Figures {
  drain: number;
  inProcess: number;
  latency: Record<string, { p50: number; p99: number }>;
  idleStatementsPerS: number;
}

const PG_SERVER = process.env.BENCH_PG_URL ?? 'postgresql://postgres@127.0.0.1:5432';
const MARIADB_SERVER = process.env.BENCH_MARIADB_URL ?? 'mysql://root@127.0.0.1:3306';
const MYSQL_SCHEMA = readFileSync(new URL('../../libs/durable/prisma/schema.mysql.sql', import.meta.url), 'utf8');
const QUEUE = 'default';

/** A fresh database of `db`, with the engine's tables; its URL. */
async function freshDatabase(db: Db): Promise<string> {
  if (db === 'postgres') {
    const url = benchDbUrl(PG_SERVER, 'dbs');
    await recreateDatabase(url);
    await createSchema(url);
    return url;
  }
  const name = 'bench_dbs';
  const c = await mariaServer();
  try {
    await c.query(`DROP DATABASE IF EXISTS ${name}`);
    await c.query(`CREATE DATABASE ${name}`);
    await c.query(`USE ${name}`);
    await c.query(MYSQL_SCHEMA);
  } finally {
    await c.end();
  }
  return `${MARIADB_SERVER.replace(/\/+$/, '')}/${name}`;
}

async function mariaServer() {
  const u = new URL(MARIADB_SERVER);
  return createConnection({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username) || 'root',
    password: decodeURIComponent(u.password) || undefined,
    multipleStatements: true,
    timezone: 'Z',
  });
}

/** Statements the server has answered so far (MariaDB: Questions; Postgres: the database's commits, one per autocommit statement). */
async function serverStatements(db: Db, url: string): Promise<number> {
  if (db === 'postgres') {
    return withClient(url, async (c) => {
      const { rows } = await c.query<{ n: string }>(
        `SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()`,
      );
      return Number(rows[0].n);
    });
  }
  const c = await mariaServer();
  try {
    const [row] = await c.query<Array<{ Value: string }>>("SHOW GLOBAL STATUS LIKE 'Questions'");
    return Number(row.Value);
  } finally {
    await c.end();
  }
}

/** Runs finished so far (SUCCEEDED). */
async function succeeded(db: Db, url: string): Promise<number> {
  if (db === 'postgres')
    return withClient(url, async (c) =>
      Number((await c.query(`SELECT count(*) AS n FROM durable_runs WHERE status = 'SUCCEEDED'`)).rows[0].n),
    );
  const c = await createConnection(url.replace(/^mysql:/, 'mariadb:'));
  try {
    const [row] = await c.query<Array<{ n: bigint }>>(`SELECT count(*) AS n FROM durable_runs WHERE status = 'SUCCEEDED'`);
    return Number(row.n);
  } finally {
    await c.end();
  }
}

/** Start → first claim of each run, from the database's own timestamps (ms). */
async function claimDelays(db: Db, url: string, ids: string[]): Promise<number[]> {
  const sql = `SELECT r.created_at, r.started_at FROM durable_runs r WHERE r.id IN (${ids.map((_, i) => (db === 'postgres' ? `$${i + 1}` : '?')).join(', ')})`;
  let rows: Array<{ created_at: Date; started_at: Date }>;
  if (db === 'postgres') rows = await withClient(url, async (c) => (await c.query(sql, ids)).rows);
  else {
    const c = await createConnection({ ...mariaConfig(url), timezone: 'Z' });
    try {
      rows = await c.query(sql, ids);
    } finally {
      await c.end();
    }
  }
  return rows.map((r) => new Date(r.started_at).getTime() - new Date(r.created_at).getTime());
}

function mariaConfig(url: string) {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 3306), user: decodeURIComponent(u.username), database: u.pathname.slice(1) };
}

function engine(url: string, shape: Shape, options: Record<string, unknown>): DurableEngine {
  const registry = new WorkflowRegistry();
  registry.register({
    name: 'bench',
    queue: QUEUE,
    options: {},
    run: async () => {
      let total = 0;
      for (let i = 0; i < shape.steps; i++) total += (await Durable.step(`s${i}`, async () => i)) as number;
      return total;
    },
  });
  return new DurableEngine({ registry, connection: url, poolSize: 10, options: { logLevel: 'warn', ...options } });
}

const waitFor = async (done: () => Promise<boolean>, timeoutMs: number) => {
  for (const end = Date.now() + timeoutMs; Date.now() < end; await new Promise((r) => setTimeout(r, 25))) if (await done()) return;
  throw new Error(`not done within ${timeoutMs} ms`);
};

async function measure(db: Db, shape: Shape, n: number, concurrency: number, latencyRuns: number): Promise<Figures> {
  const input = { data: 'x'.repeat(shape.payload) };
  // The drain: everything enqueued, then one worker.
  let url = await freshDatabase(db);
  const client = engine(url, shape, { worker: false });
  await client.start();
  for (let i = 0; i < n; i += 500)
    await client.startMany(Array.from({ length: Math.min(500, n - i) }, () => ({ workflow: 'bench', input })));
  const worker = engine(url, shape, { concurrency });
  const t0 = performance.now();
  await worker.start();
  await waitFor(async () => (await succeeded(db, url)) >= n, 300_000);
  const drain = n / ((performance.now() - t0) / 1000);
  await worker.stop();
  await client.stop();

  // One by one in the worker's process: 10 callers, each starting a run and awaiting its result.
  url = await freshDatabase(db);
  const local = engine(url, shape, { concurrency });
  await local.start();
  const half = Math.round(n / 2);
  const t1 = performance.now();
  await oneByOne(half, 10, async () => (await local.startRun('bench', input)).result({ timeoutMs: 60_000 }));
  const inProcess = half / ((performance.now() - t1) / 1000);
  await local.stop();

  // Start → first claim across engines, and the idle cost.
  const latency: Figures['latency'] = {};
  let idleStatementsPerS = 0;
  for (const pollMs of [1_000, 100]) {
    url = await freshDatabase(db);
    const starter = engine(url, shape, { worker: false });
    const claimer = engine(url, shape, { concurrency, pollIntervalMs: pollMs });
    await starter.start();
    await claimer.start();
    if (pollMs === 1_000) {
      await new Promise((r) => setTimeout(r, 1_000));
      const before = await serverStatements(db, url);
      const s0 = performance.now();
      await new Promise((r) => setTimeout(r, 10_000));
      const after = await serverStatements(db, url);
      idleStatementsPerS = Math.max(0, after - before - 2) / ((performance.now() - s0) / 1000); // minus this probe's own statements
    }
    const ids: string[] = [];
    for (let i = 0; i < latencyRuns; i++) {
      const h = await starter.startRun('bench', input);
      ids.push(h.id);
      await new Promise((r) => setTimeout(r, 20 + Math.random() * 30));
    }
    await waitFor(async () => (await succeeded(db, url)) >= latencyRuns, 120_000);
    const p = percentiles(await claimDelays(db, url, ids), [50, 99]);
    latency[`poll ${pollMs} ms`] = { p50: p.p50, p99: p.p99 };
    await claimer.stop();
    await starter.stop();
  }
  if (db === 'postgres') await dropDatabase(benchDbUrl(PG_SERVER, 'dbs'));
  return { drain, inProcess, latency, idleStatementsPerS };
}

const fmt = (x: number, digits = 0) => x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export async function runDatabasesBench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      workflows: { type: 'string' },
      concurrency: { type: 'string' },
      rounds: { type: 'string' },
      'latency-runs': { type: 'string' },
    },
  });
  const n = Number(values.workflows ?? 2000);
  const concurrency = Number(values.concurrency ?? 50);
  const rounds = Number(values.rounds ?? 2);
  const latencyRuns = Number(values['latency-runs'] ?? 100);
  const shapes: Shape[] = [
    { steps: 3, payload: 0 },
    { steps: 10, payload: 1024 },
  ];
  console.log(
    `nestjs-durable on PostgreSQL and MariaDB: ${n} workflows per phase, concurrency ${concurrency}, ${rounds} round(s) alternating; load average at start ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  for (const shape of shapes) {
    const results: Record<Db, Figures[]> = { postgres: [], mariadb: [] };
    for (let r = 0; r < rounds; r++) {
      for (const db of ['postgres', 'mariadb'] as const) {
        process.stderr.write(`[${shape.steps} steps × ${shape.payload} B] round ${r + 1}: ${db}…\n`);
        results[db].push(await measure(db, shape, n, concurrency, latencyRuns));
      }
    }
    const best = (db: Db, f: (x: Figures) => number) => Math.max(...results[db].map(f));
    const median = (db: Db, f: (x: Figures) => number) => {
      const xs = results[db].map(f).sort((a, b) => a - b);
      return xs[Math.floor(xs.length / 2)];
    };
    console.log(
      `\n== ${shape.steps} steps, ${shape.payload ? `${shape.payload} B input` : 'no payload'} (best of ${rounds}; latencies: the median round) ==`,
    );
    const rows: Array<[string, (x: Figures) => number, 'best' | 'median', number]> = [
      ['drain, workflows/s', (x) => x.drain, 'best', 0],
      ['one by one in-process (10 callers), workflows/s', (x) => x.inProcess, 'best', 0],
      ['start → claim from another engine, poll 1000 ms: p50 ms', (x) => x.latency['poll 1000 ms'].p50, 'median', 1],
      ['  p99 ms', (x) => x.latency['poll 1000 ms'].p99, 'median', 1],
      ['start → claim from another engine, poll 100 ms: p50 ms', (x) => x.latency['poll 100 ms'].p50, 'median', 1],
      ['  p99 ms', (x) => x.latency['poll 100 ms'].p99, 'median', 1],
      ['idle worker: statements/s at the server (poll 1000 ms)', (x) => x.idleStatementsPerS, 'median', 1],
    ];
    console.log(`${'figure'.padEnd(58)} | ${'PostgreSQL'.padStart(10)} | ${'MariaDB'.padStart(10)} | MariaDB/PG`);
    for (const [label, f, how, digits] of rows) {
      const pg = how === 'best' ? best('postgres', f) : median('postgres', f);
      const my = how === 'best' ? best('mariadb', f) : median('mariadb', f);
      console.log(
        `${label.padEnd(58)} | ${fmt(pg, digits).padStart(10)} | ${fmt(my, digits).padStart(10)} | ${pg ? (my / pg).toFixed(2) : 'n/a'}`,
      );
    }
  }
  console.log(
    `\nload average at end ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
}
