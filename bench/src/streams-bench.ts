/**
 * npm run bench -- streams [--chunks 5000] [--paced 1000] [--every-ms 5] [--pg-url URL]
 * Durable streams on PostgreSQL:
 *  1. write rate: one run writes --chunks chunks back to back, from a step and from workflow code
 *     (each there a durable operation: the chunk and its step in one statement); chunks/s, and CPU
 *     of this process per 1,000 chunks;
 *  2. write → read latency across processes: a run writes --paced chunks, one every --every-ms, each
 *     carrying its write time; a reader in another process (forked: its own engine and connections)
 *     reads them live and records when each arrived. Once with a reader told by LISTEN/NOTIFY (an
 *     engine with a worker), once with a client-only reader that polls (every 250 ms, the default).
 *     p50/p99 of (arrival - write), and whether every chunk arrived once, in order.
 * Uses the database bench_streams (dropped at the end).
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Durable, DurableEngine, WorkflowRegistry } from 'nestjs-durable/engine';
import { benchDbUrl, dropDatabase, recreateDatabase } from './db.js';
import { createSchema } from './peers/ours-lib.js';
import { p50p90p99 } from './stats.js';
import { PG_URL_OPTION } from './cli-args.js';

type Chunk = { i: number; at: number };
interface ReaderReport {
  arrivals: number[];
  inOrder: boolean;
  count: number;
}

const SELF = fileURLToPath(import.meta.url);

/** The child: reads stream `ticks` of run `runId` to its end and reports arrival delays. */
async function reader(url: string, runId: string, listen: boolean): Promise<void> {
  const engine = new DurableEngine({ registry: new WorkflowRegistry(), connection: url, options: { worker: listen, schedules: false } });
  await engine.start();
  process.send!({ ready: true });
  const arrivals: number[] = [];
  let next = 0;
  let inOrder = true;
  for await (const c of engine.readStream<Chunk>(runId, 'ticks')) {
    arrivals.push(Date.now() - c.value.at);
    if (c.position !== next || c.value.i !== next) inOrder = false;
    next++;
  }
  await engine.stop();
  process.send!({ arrivals, inOrder, count: next } satisfies ReaderReport);
}

function registry(): WorkflowRegistry {
  const r = new WorkflowRegistry();
  // `n` chunks back to back to the stream 'ticks', from wherever it is called (a step or workflow code).
  const burst = async (n: number) => {
    const out = Durable.stream<Chunk>('ticks');
    for (let i = 0; i < n; i++) await out.write({ i, at: Date.now() });
    return n;
  };
  r.register({
    name: 'burstFromStep',
    queue: 'default',
    options: {},
    run: async (input: any) => Durable.step('write', () => burst(input.n)),
  });
  r.register({
    name: 'burstFromWorkflow',
    queue: 'default',
    options: {},
    run: async (input: any) => burst(input.n),
  });
  r.register({
    name: 'paced',
    queue: 'default',
    options: {},
    run: async (input: any) => {
      await Durable.recv('go'); // once the reader in the other process is reading
      return Durable.step('write', async () => {
        const out = Durable.stream<Chunk>('ticks');
        for (let i = 0; i < input.n; i++) {
          await out.write({ i, at: Date.now() });
          await new Promise((r) => setTimeout(r, input.everyMs));
        }
        return input.n;
      });
    },
  });
  return r;
}

async function measureLatency(url: string, engine: DurableEngine, n: number, everyMs: number, listen: boolean): Promise<ReaderReport> {
  const runId = `paced-${listen ? 'listen' : 'poll'}`;
  const handle = await engine.startRun('paced', { n, everyMs }, { id: runId });
  const child = fork(SELF, ['--reader', url, runId, String(listen)], { execArgv: ['--import', 'tsx'] });
  const report = new Promise<ReaderReport>((resolve, reject) => {
    child.on('message', (m: { ready?: boolean } & Partial<ReaderReport>) => {
      if (!m.ready) resolve(m as ReaderReport);
    });
    child.on('exit', (code) => (code ? reject(new Error(`reader exited ${code}`)) : undefined));
  });
  await new Promise<void>((resolve) => child.once('message', () => resolve()));
  await new Promise((r) => setTimeout(r, 300)); // its first read is done: it waits
  await engine.send(runId, 'go', null);
  await handle.result();
  const r = await report;
  child.kill();
  return r;
}

export async function runStreamsBench(argv: string[]): Promise<void> {
  if (argv[0] === '--reader') return reader(argv[1], argv[2], argv[3] === 'true');
  const { values: a } = parseArgs({
    args: argv,
    options: {
      chunks: { type: 'string', default: '5000' },
      paced: { type: 'string', default: '1000' },
      'every-ms': { type: 'string', default: '5' },
      'pg-url': PG_URL_OPTION,
    },
  });
  const chunks = Number(a.chunks);
  const paced = Number(a.paced);
  const everyMs = Number(a['every-ms']);
  const url = benchDbUrl(a['pg-url']!, 'streams');
  await recreateDatabase(url);
  await createSchema(url);
  const engine = new DurableEngine({ registry: registry(), connection: url, options: { concurrency: 4 } });
  await engine.start();
  try {
    console.log(
      `streams on PostgreSQL: ${chunks} chunks back to back, then ${paced} chunks one every ${everyMs} ms to a reader in another process`,
    );
    for (const workflow of ['burstFromStep', 'burstFromWorkflow']) {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await (await engine.startRun(workflow, { n: chunks })).result();
      const s = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const where = workflow === 'burstFromStep' ? 'from a step   ' : 'from workflow ';
      console.log(
        `  write ${where}: ${Math.round(chunks / s).toLocaleString('en')} chunks/s (${chunks} in ${s.toFixed(2)} s), ` +
          `CPU ${(((cpu.user + cpu.system) / 1000 / chunks) * 1000).toFixed(0)} ms per 1,000 chunks`,
      );
    }
    for (const listen of [true, false]) {
      const r = await measureLatency(url, engine, paced, everyMs, listen);
      const p = p50p90p99(r.arrivals);
      const who = listen ? 'reader with LISTEN (a worker engine)' : 'client-only reader (polls every 250 ms)';
      console.log(
        `  write → read, ${who}: p50 ${p.p50.toFixed(1)} ms, p99 ${p.p99.toFixed(1)} ms; ` +
          `${r.count}/${paced} chunks${r.inOrder ? ', each once and in order' : ', OUT OF ORDER or missing'}`,
      );
    }
  } finally {
    await engine.stop();
    await dropDatabase(url);
  }
}

// Forked as the reader: `tsx streams-bench.ts --reader <url> <runId> <listen>`.
if (process.argv[2] === '--reader') await runStreamsBench(process.argv.slice(2));
