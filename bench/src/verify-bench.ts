/**
 * npm run bench -- verify [--runs 100000] [--steps 5] [--broken 100] [--page-size 500] [--pg-url URL]
 * `verify` over many in-flight runs: N runs WAITING in a recv after K recorded steps each (inserted
 * with generate_series, as a week of order traffic would leave them), of which --broken recorded a
 * step the code no longer has at that position. Replays them all with verifyRuns() and prints the
 * time, runs/s, peak RSS and the RSS before (memory stays bounded: one keyset page at a time).
 * Uses the database bench_verify (dropped at the end). With NODE_OPTIONS=--expose-gc it also prints
 * the live heap (after a full GC) every 20,000 runs.
 */
import { parseArgs } from 'node:util';
import { Durable, verifyRuns, WorkflowRegistry } from 'nestjs-durable/engine';
import { benchDbUrl, dropDatabase, recreateDatabase, withClient } from './db.js';
import { createSchema } from './peers/ours-lib.js';
import { PG_URL_OPTION } from './cli-args.js';

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

export async function runVerifyBench(argv: string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      runs: { type: 'string', default: '100000' },
      steps: { type: 'string', default: '5' },
      broken: { type: 'string', default: '100' },
      'page-size': { type: 'string', default: '500' },
      'pg-url': PG_URL_OPTION,
    },
  });
  const runs = Number(a.runs);
  const steps = Number(a.steps);
  const broken = Number(a.broken);
  const url = benchDbUrl(a['pg-url']!, 'verify');
  await recreateDatabase(url);
  await createSchema(url);
  const t0 = Date.now();
  await withClient(url, async (c) => {
    await c.query(
      `INSERT INTO durable_runs (id, workflow_name, status, input, available_at, app_version)
       SELECT 'run-' || lpad(i::text, 7, '0'), 'order', 'WAITING', jsonb_build_object('order', i), now() + interval '1 day', '1'
       FROM generate_series(1, $1) i`,
      [runs],
    );
    // K steps per run; the first --broken runs recorded "legacy" where the code now calls s1.
    await c.query(
      `INSERT INTO durable_steps (run_id, seq, name, status, output)
       SELECT 'run-' || lpad(i::text, 7, '0'), s, CASE WHEN s = 1 AND i <= $3 THEN 'legacy' ELSE 's' || s END, 'SUCCEEDED',
              to_jsonb('result ' || s)
       FROM generate_series(1, $1) i, generate_series(0, $2 - 1) s`,
      [runs, steps, broken],
    );
    await c.query('VACUUM ANALYZE durable_runs, durable_steps'); // statistics now, whatever the server's autovacuum does
  });
  process.stderr.write(`generated ${runs} WAITING runs × ${steps} steps in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);

  const registry = new WorkflowRegistry();
  registry.register({
    name: 'order',
    queue: 'default',
    options: {},
    run: async () => {
      for (let s = 0; s < steps; s++) await Durable.step(`s${s}`, () => `result ${s}`);
      return Durable.recv('shipped');
    },
  });
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  let peakHeap = 0;
  const report = await verifyRuns(registry, url, {
    pageSize: Number(a['page-size']),
    onProgress: (p) => {
      peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
      if (p.checked % 20_000 >= Number(a['page-size'])) return;
      global.gc?.(); // with node --expose-gc: the live heap after each 20,000 runs (flat = bounded)
      const live = global.gc ? `, live heap ${mb(process.memoryUsage().heapUsed)}` : '';
      process.stderr.write(`  ${p.checked} checked, ${p.failed} would fail, ${(p.elapsedMs / 1000).toFixed(1)} s${live}\n`);
    },
  });
  const peakRss = process.resourceUsage().maxRSS * 1024;
  await dropDatabase(url);
  const secs = report.elapsedMs / 1000;
  process.stdout.write(
    `verify: ${report.checked} in-flight runs (${steps} recorded steps each) replayed in ${secs.toFixed(2)} s ` +
      `(${Math.round(report.checked / secs)} runs/s); ${report.failed} would fail (expected ${broken}); ` +
      `peak RSS ${mb(peakRss)} (RSS before ${mb(rssBefore)}, peak heap used ${mb(peakHeap)}), page size ${a['page-size']}\n`,
  );
  if (report.failed !== broken || report.checked !== runs) process.exitCode = 1;
}
