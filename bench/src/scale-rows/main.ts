/**
 * npm run bench -- scale [--finished 10000000] [--at 1000000,3000000] [--steps 3] [--days 30] …
 * Finished runs by the million (with their steps and history): at each size of the table (the
 * checkpoints --at, then --finished) the claim, the admin API's queries, retention, and the bytes
 * per run in tables and indexes. One table grows through the checkpoints (runs are added older
 * than the ones before: runs arrive at a steady rate, --finished of them over --days days).
 * Uses the database <prefix>_scale_rows (dropped at the end unless --keep). The server's
 * autovacuum setting is printed: on these machines it is off, so the run VACUUM ANALYZEs itself.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { benchDbUrl, databaseName, dropDatabase, recreateDatabase } from '../db.js';
import { createSchema, OursHost, type HostConfig } from '../peers/ours-lib.js';
import { dropIndexes, fillRuns, rebuildIndexes, tableBytes, type TableBytes } from './fill.js';
import { adminQueries, claimFigures, retention, type ClaimFigures, type QueryTiming, type RetentionFigures } from './measure.js';
import { renderScaleRows } from './render.js';
import { PG_URL_OPTION } from '../cli-args.js';

export interface Checkpoint {
  runs: number;
  loadAverage: number[];
  fillSeconds: number;
  indexBuildSeconds: number;
  vacuumAnalyzeSeconds: number;
  tables: TableBytes[];
  bytesPerRun: { tables: number; indexes: number; total: number };
  claim: ClaimFigures;
  admin: QueryTiming[];
  retention: RetentionFigures;
}

export interface ScaleRowsReport {
  meta: Record<string, unknown>;
  checkpoints: Checkpoint[];
  stoppedBecause?: string;
}

const int = (name: string, v: string | undefined, min = 1) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}, got ${v}`);
  return n;
};

/** Free bytes on the file system holding the server's data directory (the bench runs on the same machine). */
function freeBytes(dataDir: string): { bytes: number; df: string } {
  const df = execFileSync('df', ['-h', dataDir]).toString().trim();
  const kb = execFileSync('df', ['-k', '--output=avail', dataDir]).toString().trim().split('\n')[1];
  return { bytes: Number(kb) * 1024, df };
}

export async function runScaleRowsBench(argv: string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      finished: { type: 'string', default: '10000000' },
      at: { type: 'string', default: '1000000,3000000' },
      steps: { type: 'string', default: '3' },
      days: { type: 'string', default: '30' },
      chunk: { type: 'string', default: '250000' },
      'claim-runs': { type: 'string', default: '2000' },
      rounds: { type: 'string', default: '3' },
      reps: { type: 'string', default: '5' },
      'retention-runs': { type: 'string', default: '50000' },
      keep: { type: 'boolean', default: false },
      'pg-url': PG_URL_OPTION,
      out: { type: 'string', default: fileURLToPath(new URL('../../results/scale-rows.json', import.meta.url)) },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (a.help) {
    process.stdout.write(
      'usage: npm run bench -- scale [--finished 10000000] [--at 1000000,3000000] [--steps 3] [--days 30] [--chunk 250000]\n' +
        '       [--claim-runs 2000] [--rounds 3] [--reps 5] [--retention-runs 50000] [--keep] [--pg-url URL] [--out FILE]\n',
    );
    return;
  }
  const finished = int('finished', a.finished);
  const targets = [...new Set([...a.at!.split(',').map((x) => int('at', x.trim())), finished])]
    .filter((n) => n <= finished)
    .sort((x, y) => x - y);
  const steps = int('steps', a.steps);
  const spacingS = (int('days', a.days) * 86_400) / finished;
  const chunk = int('chunk', a.chunk);
  const log = (m: string) => process.stderr.write(`[scale] ${m}\n`);
  const url = benchDbUrl(a['pg-url']!, 'scale_rows');
  const report: ScaleRowsReport = { meta: {}, checkpoints: [] };
  const save = () => {
    mkdirSync(dirname(a.out!), { recursive: true });
    writeFileSync(a.out!, JSON.stringify(report, null, 2) + '\n');
  };

  await recreateDatabase(url);
  await createSchema(url);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const setting = async (name: string) => (await c.query(`SELECT current_setting($1) AS v`, [name])).rows[0].v as string;
  const dataDir = await setting('data_directory').catch(() => '/');
  const free0 = freeBytes(dataDir);
  report.meta = {
    date: new Date().toISOString(),
    command: `npm run bench -- scale ${argv.join(' ')}`.trim(),
    database: databaseName(url),
    loadAverage: loadavg().map((x) => Number(x.toFixed(2))),
    autovacuum: await setting('autovacuum'),
    sharedBuffers: await setting('shared_buffers'),
    df: free0.df,
    finished,
    checkpoints: targets,
    steps,
    days: Number(a.days),
    historyEventsPerRun: 3,
  };
  log(
    `autovacuum = ${report.meta.autovacuum} on this server: this run VACUUM ANALYZEs after each fill (a user's server has autovacuum on)`,
  );
  log(`disk where the data lives:\n${free0.df}`);
  const cfg: HostConfig = { url, steps, concurrency: 10, dbWrite: false, worker: false, history: true, poolSize: 4 };
  const host = new OursHost(cfg);
  await host.start();
  let have = 0;
  try {
    for (const target of targets) {
      const last = report.checkpoints.at(-1);
      const perRun = last ? last.bytesPerRun.total : 2200;
      const need = (target - have) * perRun * 1.3;
      const free = freeBytes(dataDir).bytes;
      if (need > free) {
        report.stoppedBecause = `${target.toLocaleString('en-US')} runs need about ${(need / 2 ** 30).toFixed(1)} GiB more (${perRun.toFixed(0)} B/run + 30 %), the disk has ${(free / 2 ** 30).toFixed(1)} GiB free`;
        log(`STOP: ${report.stoppedBecause}`);
        break;
      }
      log(
        `to ${target.toLocaleString('en-US')} runs: dropping the indexes, inserting ${(target - have).toLocaleString('en-US')} runs × ${steps} steps + 3 history events, in chunks of ${chunk.toLocaleString('en-US')}`,
      );
      const ddl = await dropIndexes(c);
      const fillSeconds = await fillRuns(c, { from: have, to: target, chunk, steps, spacingS }, log);
      have = target;
      log(`building the indexes and keys again`);
      const indexBuildSeconds = await rebuildIndexes(c, ddl, log);
      log(`VACUUM ANALYZE`);
      let t0 = performance.now();
      await c.query('VACUUM ANALYZE durable_runs, durable_steps, durable_run_events');
      const vacuumAnalyzeSeconds = (performance.now() - t0) / 1000;
      await c.query('CHECKPOINT');
      const tables = await tableBytes(c);
      const runs = tables[0].rows;
      const sum = (f: (t: TableBytes) => number) => tables.reduce((s, t) => s + f(t), 0) / runs;
      const bytesPerRun = {
        tables: sum((t) => t.tableBytes),
        indexes: sum((t) => t.indexBytes),
        total: sum((t) => t.tableBytes + t.indexBytes),
      };
      log(
        `  ${runs.toLocaleString('en-US')} runs: ${bytesPerRun.total.toFixed(0)} B/run (${bytesPerRun.tables.toFixed(0)} tables + ${bytesPerRun.indexes.toFixed(0)} indexes); vacuum analyze ${vacuumAnalyzeSeconds.toFixed(0)} s`,
      );
      log(`  claim statement, ${a.rounds} rounds of ${a['claim-runs']} due runs`);
      t0 = performance.now();
      const claim = await claimFigures(c, cfg, int('claim-runs', a['claim-runs']), int('rounds', a.rounds));
      log(`  claim p50 ${claim.p50Ms.toFixed(2)} ms, empty ${claim.emptyP50Ms.toFixed(2)} ms, ${claim.runsPerSec.toFixed(0)} runs/s`);
      log(`  admin API queries (median of ${a.reps} after one untimed call)`);
      const admin = await adminQueries(host, int('reps', a.reps), log);
      log(`  retention: the oldest ${a['retention-runs']} runs, the sweeper's statement in batches of 500`);
      const ret = await retention(c, host, int('retention-runs', a['retention-runs']), 500);
      log(
        `  retention: ${ret.runs} runs in ${ret.seconds.toFixed(1)} s = ${ret.runsPerSec.toFixed(0)} runs/s (batch p50 ${ret.batchP50Ms.toFixed(0)} ms)`,
      );
      report.checkpoints.push({
        runs,
        loadAverage: loadavg().map((x) => Number(x.toFixed(2))),
        fillSeconds,
        indexBuildSeconds,
        vacuumAnalyzeSeconds,
        tables,
        bytesPerRun,
        claim,
        admin,
        retention: ret,
      });
      save();
    }
  } finally {
    await host.stop();
    await c.end();
    if (!a.keep) {
      await dropDatabase(url);
      log(`dropped ${databaseName(url)}`);
    }
  }
  report.meta.loadAverageAtEnd = loadavg().map((x) => Number(x.toFixed(2)));
  save();
  process.stdout.write(renderScaleRows(report) + '\n');
  log(`wrote ${a.out}`);
}
