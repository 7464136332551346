/**
 * npm run bench -- schedules [--schedules 10000] [--minutes 3] [--instances 1] [--batch 500] [--execute]
 *                            [--pg-url URL] [--out FILE]
 * N runtime schedules that all fire on every minute ('* * * * *', the worst case: one herd per
 * minute): per minute, how late the runs are after the slot (inserted: the fire statement's start,
 * the run's created_at; committed: when that statement returned, i.e. when a worker can see the
 * run), p50/p99/max, and what the scheduler costs the database per minute (its statements by name
 * and their time, commits, rows written, Postgres backend CPU of the database). By default the
 * instances only schedule (worker: false), so the database cost is the scheduler's alone;
 * --execute also runs the workflows (and reports start lag). Uses the database bench_sched
 * (dropped at the end).
 */
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import pg from 'pg';
import { DurableEngine, WorkflowRegistry, type ScheduledInput } from 'nestjs-durable/engine';
import { benchDbUrl, databaseName, dropDatabase, readDbStats, recreateDatabase, serverVersion, withClient } from './db.js';
import { createSchema, statementName } from './peers/ours-lib.js';
import { pgCpuAvailable, pgCpuDelta, snapshotPgCpu } from './pg-cpu.js';
import { percentile } from './stats.js';
import { PG_URL_OPTION } from './cli-args.js';

interface StatementStat {
  count: number;
  ms: number;
}

/** Fire statements as they returned: when, and how many runs they inserted. */
interface Fired {
  startMs: number;
  endMs: number;
  runs: number;
}

export async function runSchedulesBench(argv: string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      schedules: { type: 'string', default: '10000' },
      minutes: { type: 'string', default: '3' },
      instances: { type: 'string', default: '1' },
      batch: { type: 'string', default: '500' },
      execute: { type: 'boolean', default: false },
      'pg-url': PG_URL_OPTION,
      out: { type: 'string', default: fileURLToPath(new URL('../results/schedules.json', import.meta.url)) },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (a.help) {
    process.stdout.write(
      'usage: npm run bench -- schedules [--schedules 10000] [--minutes 3] [--instances 1] [--batch 500] [--execute] [--pg-url URL] [--out FILE]\n',
    );
    return;
  }
  const int = (name: string, v: string | undefined, min = 1) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min}, got ${v}`);
    return n;
  };
  const N = int('schedules', a.schedules);
  const minutes = int('minutes', a.minutes);
  const instances = int('instances', a.instances);
  const batch = int('batch', a.batch);
  const log = (m: string) => process.stderr.write(`[schedules] ${m}\n`);
  const url = benchDbUrl(a['pg-url']!, 'sched');

  await recreateDatabase(url);
  await createSchema(url);
  // Every minute, on second 0: all N slots at once.
  await withClient(url, async (c) => {
    await c.query(
      // overlap allow: runs that are not executed (the default here) must not make the next minute's slots skip
      `INSERT INTO durable_schedules (id, workflow_name, cron, overlap, next_fire_at)
       SELECT 'tenant-' || lpad(i::text, 6, '0'), 'tick', '* * * * *', 'allow', date_trunc('minute', now()) + interval '1 minute'
       FROM generate_series(1, $1::int) AS i`,
      [N],
    );
    await c.query('VACUUM ANALYZE durable_schedules'); // autovacuum may be off on the bench machine
  });
  log(
    `${N} schedules '* * * * *' (overlap allow), ${instances} scheduler instance(s) in this process, batch ${batch}${a.execute ? ', executing the runs' : ', not executing the runs (worker: false)'}`,
  );

  const stats = new Map<string, StatementStat>();
  const fired: Fired[] = [];
  const pools: pg.Pool[] = [];
  const engines: DurableEngine[] = [];
  for (let i = 0; i < instances; i++) {
    const pool = new pg.Pool({ connectionString: url, max: 10, application_name: 'nestjs-durable' });
    pool.on('error', () => {});
    const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<pg.QueryResult>;
    (pool as unknown as { query: unknown }).query = async (q: unknown, ...rest: unknown[]) => {
      const sql = typeof q === 'string' ? q : (q as { text: string }).text;
      const name = statementName(sql);
      const t0 = performance.now();
      const startMs = Date.now();
      const res = await query(q, ...rest);
      const s = stats.get(name) ?? { count: 0, ms: 0 };
      s.count++;
      s.ms += performance.now() - t0;
      stats.set(name, s);
      if (name === 'FIRE_SCHEDULES') {
        const runs = res.rows.reduce(
          (n: number, r: { fates: Array<[string, string]> }) => n + r.fates.filter(([, f]) => f === 'run').length,
          0,
        );
        fired.push({ startMs, endMs: Date.now(), runs });
      }
      return res;
    };
    pools.push(pool);
    const registry = new WorkflowRegistry();
    registry.register({ name: 'tick', queue: 'default', options: {}, run: async (input) => (input as ScheduledInput).scheduledAt });
    const engine = new DurableEngine({
      registry,
      connection: pool as never,
      options: { worker: a.execute, schedules: true, scheduleBatchSize: batch, concurrency: 50, history: true },
    });
    await engine.start();
    engines.push(engine);
  }

  const cpu = pgCpuAvailable();
  const results: Array<Record<string, unknown>> = [];
  const nextMinute = () => Math.ceil((Date.now() + 1) / 60_000) * 60_000;
  const sleepUntil = (t: number) => new Promise((r) => setTimeout(r, Math.max(0, t - Date.now())));
  let slot = nextMinute();
  if (slot - Date.now() < 5_000) slot += 60_000; // a clean first window
  for (let m = 0; m < minutes; m++, slot += 60_000) {
    // The window of one minute's cost: from 2 s before the slot (the scheduler reads a second ahead) to 2 s before the next.
    await sleepUntil(slot - 2_000);
    const before = {
      stats: new Map([...stats].map(([k, v]) => [k, { ...v }])),
      db: await readDbStats(url),
      cpu: cpu ? snapshotPgCpu() : null,
      fired: fired.length,
    };
    await sleepUntil(slot + 58_000);
    const after = { db: await readDbStats(url), cpu: cpu ? snapshotPgCpu() : null };
    const slotIso = new Date(slot).toISOString();
    const rows = await withClient(url, async (c) => {
      const r = await c.query<{ lag: number; start: number | null }>(
        `SELECT extract(epoch FROM created_at - $1::text::timestamptz) * 1000 AS lag, extract(epoch FROM started_at - $1::text::timestamptz) * 1000 AS start
         FROM durable_runs WHERE schedule_id IS NOT NULL AND input->'scheduledAt'->>'v' = $1::text`,
        [slotIso],
      );
      return r.rows;
    });
    const inserted = rows.map((r) => Number(r.lag)).sort((x, y) => x - y);
    const startLag = rows
      .filter((r) => r.start !== null)
      .map((r) => Number(r.start))
      .sort((x, y) => x - y);
    const committed: number[] = [];
    for (const f of fired.slice(before.fired)) for (let k = 0; k < f.runs; k++) committed.push(f.endMs - slot);
    committed.sort((x, y) => x - y);
    const mine = fired.slice(before.fired);
    const firstFireMs = mine.length ? Math.min(...mine.map((f) => f.startMs)) - slot : null;
    const lastFireMs = mine.length ? Math.max(...mine.map((f) => f.endMs)) - slot : null;
    const statements: Record<string, StatementStat> = {};
    for (const [k, v] of stats) {
      const b = before.stats.get(k) ?? { count: 0, ms: 0 };
      if (v.count - b.count) statements[k] = { count: v.count - b.count, ms: Math.round(v.ms - b.ms) };
    }
    const pct = (xs: number[]) =>
      xs.length ? { p50: Math.round(percentile(xs, 50)), p99: Math.round(percentile(xs, 99)), max: Math.round(xs[xs.length - 1]) } : null;
    const r = {
      slot: slotIso,
      runs: rows.length,
      insertedLagMs: pct(inserted),
      committedLagMs: pct(committed),
      firstFireMs,
      lastFireMs,
      startLagMs: a.execute ? pct(startLag) : undefined,
      statements,
      statementMs: Object.values(statements).reduce((x, s) => x + s.ms, 0),
      commits: after.db.xactCommit - before.db.xactCommit,
      rowsWritten: after.db.tupWritten - before.db.tupWritten,
      pgCpuMs: before.cpu && after.cpu ? Math.round(pgCpuDelta(before.cpu, after.cpu, databaseName(url)).dbMs) : null,
    };
    results.push(r);
    log(
      `minute ${m + 1}: first fire statement sent at slot + ${firstFireMs} ms, last one done at + ${lastFireMs} ms; ${r.runs} runs, committed lag p50 ${r.committedLagMs?.p50} ms p99 ${r.committedLagMs?.p99} ms, ${JSON.stringify(statements)}`,
    );
  }
  for (const e of engines) await e.stop();
  for (const p of pools) await p.end().catch(() => {});
  await dropDatabase(url);

  const line = (cells: Array<string | number>) => `| ${cells.join(' | ')} |`;
  const fmt = (p: { p50: number; p99: number; max: number } | null | undefined) => (p ? `${p.p50} / ${p.p99} / ${p.max}` : '—');
  const out = [
    `\nnestjs-durable schedules bench: ${N} schedules firing every minute (all on second 0), ${instances} scheduler instance(s), batch ${batch}` +
      `${a.execute ? ', runs executed' : ', runs not executed'}; PostgreSQL ${await serverVersion(url)}\n`,
    line([
      'minute',
      'runs',
      'inserted lag p50/p99/max ms',
      'committed lag p50/p99/max ms',
      ...(a.execute ? ['start lag p50/p99/max ms'] : []),
      'statements',
      'statement ms',
      'commits',
      'rows written',
      'pg CPU ms',
    ]),
    line(['---', '---:', '---:', '---:', ...(a.execute ? ['---:'] : []), '---', '---:', '---:', '---:', '---:']),
    ...results.map((r) =>
      line([
        String(r.slot).slice(11, 16),
        r.runs as number,
        fmt(r.insertedLagMs as never),
        fmt(r.committedLagMs as never),
        ...(a.execute ? [fmt(r.startLagMs as never)] : []),
        Object.entries(r.statements as Record<string, StatementStat>)
          .map(([k, v]) => `${k} ${v.count}`)
          .join(', '),
        r.statementMs as number,
        r.commits as number,
        r.rowsWritten as number,
        (r.pgCpuMs as number | null) ?? '—',
      ]),
    ),
  ];
  process.stdout.write(out.join('\n') + '\n');
  mkdirSync(dirname(a.out!), { recursive: true });
  writeFileSync(
    a.out!,
    JSON.stringify(
      {
        date: new Date().toISOString(),
        command: `npm run bench -- schedules ${argv.join(' ')}`.trim(),
        schedules: N,
        instances,
        batch,
        execute: a.execute,
        minutes: results,
      },
      null,
      2,
    ),
  );
  log(`wrote ${a.out}`);
}
