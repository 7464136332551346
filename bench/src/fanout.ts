/**
 * npm run bench -- fanout [--children 100000] [--dbos-children 10000] [--concurrency 50] [--skip-dbos]
 * One workflow starts N children (one trivial step each) and waits for all of them, then reads
 * their results. Ours: Durable.startChildren + group.wait() + group.results() in pages. DBOS: its
 * documented pattern, DBOS.startWorkflow(child, { queueName }) per child from the parent, then
 * getResult() of each handle. Prints the time to the first child started, to the last child
 * started, to the join (the parent's result), and the process's peak RSS above its idle RSS,
 * each engine in a process of its own (the one that runs the parent and the workers).
 *
 * Each side runs in a child process (`--side ours|dbos`) so that peak memory is its own.
 */
import { DBOS } from '@dbos-inc/dbos-sdk';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Durable, DurableEngine, WorkflowRegistry } from 'nestjs-durable/engine';
import { benchDbUrl, dropDatabase, recreateDatabase } from './db.js';
import { createSchema } from './peers/ours-lib.js';
import { withStatistics } from './autoanalyze.js';
import { dbosVersion } from './peers/dbos.js';
import { PG_URL_OPTION, positiveInt } from './cli-args.js';

interface SideFigures {
  side: string;
  children: number;
  firstStartedMs: number;
  lastStartedMs: number;
  joinedMs: number;
  peakRssMb: number;
  idleRssMb: number;
  /** JS heap in use after the join and a full GC, above the same before the fan-out: what the process retained. */
  retainedHeapMb: number;
  sum: number;
}

/** Tracks the first and last child execution and the process's peak RSS. */
class Probe {
  readonly t0 = performance.now();
  first = 0;
  last = 0;
  peak = process.memoryUsage().rss;
  readonly idle = this.peak;
  readonly idleHeap = process.memoryUsage().heapUsed;
  retainedHeap = 0;
  private readonly timer = setInterval(() => (this.peak = Math.max(this.peak, process.memoryUsage().rss)), 50);
  started(): void {
    const t = performance.now() - this.t0;
    if (!this.first) this.first = t;
    this.last = Math.max(this.last, t);
  }
  stop(): void {
    clearInterval(this.timer);
    this.peak = Math.max(this.peak, process.memoryUsage().rss);
    global.gc?.();
    this.retainedHeap = process.memoryUsage().heapUsed - this.idleHeap;
  }
}

const mb = (b: number) => Math.round(b / 1024 / 1024);

async function runOurs(url: string, n: number, concurrency: number): Promise<SideFigures> {
  await createSchema(url);
  let probe: Probe | undefined;
  const registry = new WorkflowRegistry();
  registry.register({
    name: 'fanChild',
    queue: 'fanout',
    options: {},
    run: async (i: unknown) => {
      probe?.started();
      return Durable.step('double', async () => (i as number) * 2);
    },
  });
  registry.register({
    name: 'fanParent',
    queue: 'fanout',
    options: {},
    run: async (count: unknown) => {
      const group = await Durable.startChildren<number>('fanChild', { count: count as number, input: (i) => i });
      const progress = await group.wait();
      let sum = 0;
      for (let from = 0; from < group.size; from += 1_000) {
        for (const o of await group.results({ from, limit: 1_000 })) if (o.status === 'SUCCEEDED') sum += o.output;
      }
      return { sum, failed: progress.failed };
    },
  });
  const engine = new DurableEngine({
    registry,
    connection: url,
    poolSize: 20,
    options: { concurrency, logger: { log() {}, warn() {}, error: (m) => process.stderr.write(`${m}\n`), debug() {} } },
  });
  await engine.start();
  try {
    // Warm-up: a small fan-out (JIT, pools), then the measured one.
    await (await engine.startRun('fanParent', 200, { id: 'warm' })).result({ timeoutMs: 120_000 });
    global.gc?.();
    probe = new Probe();
    const h = await engine.startRun<{ sum: number; failed: number }>('fanParent', n, { id: 'fan' });
    const out = await h.result({ timeoutMs: 3_600_000 });
    const joined = performance.now() - probe.t0;
    probe.stop();
    if (out.failed) throw new Error(`${out.failed} children failed`);
    return {
      side: 'ours',
      children: n,
      firstStartedMs: probe.first,
      lastStartedMs: probe.last,
      joinedMs: joined,
      peakRssMb: mb(probe.peak),
      idleRssMb: mb(probe.idle),
      retainedHeapMb: mb(probe.retainedHeap),
      sum: out.sum,
    };
  } finally {
    await engine.stop();
  }
}

async function runDbos(url: string, n: number, concurrency: number): Promise<SideFigures> {
  let probe: Probe | undefined;
  const QUEUE = 'fanout_queue';
  const step = DBOS.registerStep(async (i: number) => i * 2, { name: 'double' });
  const child = DBOS.registerWorkflow(
    async (i: number): Promise<number> => {
      probe?.started();
      return step(i);
    },
    { name: 'fanChild' },
  );
  const parent = DBOS.registerWorkflow(
    async (count: number): Promise<number> => {
      const handles = [];
      for (let i = 0; i < count; i++) handles.push(await DBOS.startWorkflow(child, { queueName: QUEUE })(i));
      let sum = 0;
      for (const h of handles) sum += await h.getResult();
      return sum;
    },
    { name: 'fanParent' },
  );
  DBOS.setConfig({ name: 'nestjs-durable-bench-fanout', systemDatabaseUrl: url, systemDatabasePoolSize: 20, logLevel: 'warn' });
  await DBOS.launch();
  await DBOS.registerQueue(QUEUE, { workerConcurrency: concurrency, minPollingIntervalMs: 10, onConflict: 'always_update' });
  await new Promise((r) => setTimeout(r, 1_500)); // a queue registered after launch is picked up within a second
  try {
    await (await DBOS.startWorkflow(parent)(200)).getResult();
    global.gc?.();
    probe = new Probe();
    const sum = await (await DBOS.startWorkflow(parent)(n)).getResult();
    const joined = performance.now() - probe.t0;
    probe.stop();
    return {
      side: `DBOS ${dbosVersion()}`,
      children: n,
      firstStartedMs: probe.first,
      lastStartedMs: probe.last,
      joinedMs: joined,
      peakRssMb: mb(probe.peak),
      idleRssMb: mb(probe.idle),
      retainedHeapMb: mb(probe.retainedHeap),
      sum,
    };
  } finally {
    await DBOS.shutdown();
  }
}

/** Runs one side in a process of its own and returns its figures (its last stdout line, JSON). */
function side(name: 'ours' | 'dbos', args: string[]): Promise<SideFigures> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...process.execArgv, '--expose-gc', fileURLToPath(import.meta.url), '--side', name, ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('error', reject);
    p.on('exit', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`the ${name} side exited with code ${code}: ${out}`));
      else resolve(JSON.parse(line) as SideFigures);
    });
  });
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

export async function runFanoutBench(argv: string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      children: { type: 'string', default: '100000' },
      'dbos-children': { type: 'string', default: '10000' },
      concurrency: { type: 'string', default: '50' },
      'skip-dbos': { type: 'boolean', default: false },
      'pg-url': PG_URL_OPTION,
    },
  });
  const [children, dbosChildren, concurrency] = (['children', 'dbos-children', 'concurrency'] as const).map((k) => positiveInt(k, a[k]));
  const common = ['--concurrency', String(concurrency), '--pg-url', a['pg-url']!];
  process.stdout.write(
    `One workflow starts N children (1 step each) and joins them; workers in the same process, concurrency ${concurrency}\n`,
  );
  const rows: SideFigures[] = [];
  const runs: Array<['ours' | 'dbos', number]> = [['ours', children]];
  if (!a['skip-dbos']) {
    runs.push(['dbos', Math.min(dbosChildren, children)]);
    if (dbosChildren < children) runs.push(['ours', dbosChildren]);
  }
  for (const [name, n] of runs) {
    process.stderr.write(`[fanout] ${name}: ${n} children…\n`);
    rows.push(await side(name, ['--children', String(n), ...common]));
  }
  process.stdout.write(
    '\n| engine | children | first child started | last child started | joined | children/s | peak RSS above idle | heap retained after GC |\n|---|---:|---:|---:|---:|---:|---:|---:|\n',
  );
  for (const r of rows) {
    process.stdout.write(
      `| ${r.side} | ${r.children.toLocaleString('en')} | ${s(r.firstStartedMs)} | ${s(r.lastStartedMs)} | ${s(r.joinedMs)} | ${Math.round(r.children / (r.joinedMs / 1000)).toLocaleString('en')} | ${r.peakRssMb - r.idleRssMb} MB (idle ${r.idleRssMb} MB) | ${r.retainedHeapMb} MB |\n`,
    );
  }
}

// A side, in its own process.
if (process.argv[2] === '--side') {
  const { values: a } = parseArgs({
    args: process.argv.slice(4),
    options: { children: { type: 'string' }, concurrency: { type: 'string' }, 'pg-url': { type: 'string' } },
  });
  const url = benchDbUrl(a['pg-url']!, `fanout_${process.argv[3]}`);
  const f = process.argv[3] === 'dbos' ? runDbos : runOurs;
  await recreateDatabase(url);
  // Statistics as a server with autovacuum keeps them (see autoanalyze.ts): the tables grow from nothing to the fan-out's size.
  const { result: figures } = await withStatistics(url, () => f(url, Number(a.children), Number(a.concurrency)));
  await dropDatabase(url);
  process.stdout.write(`${JSON.stringify(figures)}\n`);
  process.exit(0);
}
