/**
 * npm run bench -- awaited [--runs 3000] [--callers 10] [--steps 3] [--rounds 3]
 * Runs started and awaited in the worker's own process, as an app's request handler does
 * (`await (await client.start(…)).result()`): `callers` concurrent loops, each starting a run and
 * awaiting its result before the next. Prints runs/s per round on a fresh database (<prefix>_awaited),
 * and the CPU per run of this process (engine, worker and callers) and of the Postgres server.
 */
import { parseArgs } from 'node:util';
import { oneByOne } from './callers.js';
import { benchDbUrl, databaseName, dropDatabase, recreateDatabase } from './db.js';
import { pgCpuAvailable, pgCpuDelta, snapshotPgCpu } from './pg-cpu.js';
import { createSchema, OursHost, WORKFLOW } from './peers/ours-lib.js';
import { PG_URL_OPTION, positiveInt } from './cli-args.js';

export async function runAwaitedBench(argv: string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      runs: { type: 'string', default: '3000' },
      callers: { type: 'string', default: '10' },
      steps: { type: 'string', default: '3' },
      rounds: { type: 'string', default: '3' },
      'pg-url': PG_URL_OPTION,
    },
  });
  const [runs, callers, steps, rounds] = (['runs', 'callers', 'steps', 'rounds'] as const).map((k) => positiveInt(k, a[k]));
  const url = benchDbUrl(a['pg-url']!, 'awaited');
  const dbName = databaseName(url);
  process.stdout.write(`Runs of ${steps} steps started and awaited in the worker's process, ${callers} callers, ${runs} per round\n`);
  for (let round = 1; round <= rounds; round++) {
    await recreateDatabase(url);
    await createSchema(url);
    const host = new OursHost({ url, steps, concurrency: 50, dbWrite: false, worker: true, history: true, poolSize: 25 });
    await host.start();
    try {
      const startAndAwait = async (id: string) => (await host.engine.startRun(WORKFLOW, '', { id })).result();
      await oneByOne(Math.min(300, runs), callers, (i) => startAndAwait(`warm-${i}`));
      const pg0 = snapshotPgCpu();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await oneByOne(runs, callers, (i) => startAndAwait(`run-${i}`));
      const perSec = runs / ((performance.now() - t0) / 1000);
      const cpu = process.cpuUsage(cpu0);
      const pg = pgCpuDelta(pg0, snapshotPgCpu(), dbName);
      const perRun = (ms: number) => (ms / runs).toFixed(3);
      process.stdout.write(
        `  round ${round}: ${perSec.toFixed(0)} runs/s started and awaited; CPU ms per run: node ${perRun((cpu.user + cpu.system) / 1000)}` +
          (pgCpuAvailable() ? `, postgres ${perRun(pg.dbMs + pg.auxMs)}` : '') +
          '\n',
      );
    } finally {
      await host.stop();
      await dropDatabase(url);
    }
  }
}
