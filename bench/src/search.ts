/**
 * `npm run bench -- search [--runs 200000] [--reps 5] [--pg-url …] [--mariadb-url …]`: what the admin
 * API's tag and input search cost on PostgreSQL and on MariaDB, side by side. Each database gets
 * --runs finished runs (SUCCEEDED, created over the last 30 days, newest last), written in one
 * INSERT … SELECT from a number series, then its statistics refreshed:
 *   - tags: every run has `batch:<i mod 100>` (a tag 1 run in 100 has); 1 run in 10,000 also has `vip`;
 *   - input: { customer: "c<i mod 1000>", n: i } (a customer 1 run in 1,000 has).
 * Then the admin API's list (AdminService.listRuns, as GET /durable/runs calls it: the first page of
 * 50, newest first, and the per-status counts within their time budget) with no filter, each filter,
 * and a tag with a status. Prints the median of --reps calls per query, in ms, per database.
 * PostgreSQL answers tag filters from its GIN index (durable_runs_tags_idx); input has no index on
 * either database (a filter on the rows the sort reads: about 50 ÷ its share of the runs are read for a
 * page, and the counts read every row in their budget); MariaDB has no index over a JSON array, so a tag
 * is looked up in durable_run_tags, the row per tag the engine writes with each run there.
 */
import { parseArgs } from 'node:util';
import { AdminService } from '../../libs/durable/src/admin/admin-service.js';
import { parseListQuery } from '../../libs/durable/src/admin/params.js';
import { benchDbUrl, withClient } from './db.js';
import { mariadbSide, postgresSide, type Side } from './databases-sides.js';
import { withMaria } from './mariadb.js';
import { OursHost } from './peers/ours-lib.js';
import { percentile } from './stats.js';
import { PG_URL_OPTION, positiveInt } from './cli-args.js';

const QUERIES: Array<[label: string, query: Record<string, string>]> = [
  ['newest 50, no filter', {}],
  ['tag held by 1 % of runs', { tag: 'batch:7' }],
  ['tag held by 0.01 % of runs', { tag: 'vip' }],
  ['input {"customer":…} held by 0.1 %', { input: '{"customer":"c42"}' }],
  ['tag 1 % + status FAILED (none)', { tag: 'batch:7', status: 'FAILED' }],
];

/** N finished runs in one statement per database (see the header). */
async function fill(side: Side, runs: number): Promise<void> {
  if (side.db === 'postgres') {
    await withClient(side.url, async (c) => {
      await c.query(
        `INSERT INTO durable_runs (id, workflow_name, queue, status, input, output, created_at, started_at, finished_at, updated_at, tags)
         SELECT 'S-' || lpad(i::text, 9, '0'), 'search', 'default', 'SUCCEEDED',
                jsonb_build_object('customer', 'c' || (i % 1000), 'n', i), '1'::jsonb, t, t, t, t,
                CASE WHEN i % 10000 = 0 THEN ARRAY['batch:' || (i % 100), 'vip'] ELSE ARRAY['batch:' || (i % 100)] END
         FROM generate_series(1, $1::int) i, LATERAL (SELECT now() - (($1::int - i) * (30 * 86400.0 / $1::int)) * interval '1 second' AS t) x`,
        [runs],
      );
      await c.query('VACUUM ANALYZE durable_runs');
    });
    return;
  }
  await withMaria(side.url, async (c) => {
    await c.query(
      `INSERT INTO durable_runs (id, workflow_name, queue, status, input, output, created_at, started_at, finished_at, updated_at, tags)
       SELECT CONCAT('S-', LPAD(seq, 9, '0')), 'search', 'default', 'SUCCEEDED',
              JSON_OBJECT('customer', CONCAT('c', seq % 1000), 'n', seq), '1', t, t, t, t,
              IF(seq % 10000 = 0, JSON_ARRAY(CONCAT('batch:', seq % 100), 'vip'), JSON_ARRAY(CONCAT('batch:', seq % 100)))
       FROM (SELECT seq, UTC_TIMESTAMP(3) - INTERVAL ROUND((${runs} - seq) * (30 * 86400000000 / ${runs})) MICROSECOND AS t
             FROM seq_1_to_${runs}) s`,
    );
    // The tag index rows the engine writes with each run (durable_run_tags).
    await c.query(
      `INSERT INTO durable_run_tags (tag, run_id)
       SELECT CONCAT('batch:', seq % 100), CONCAT('S-', LPAD(seq, 9, '0')) FROM seq_1_to_${runs}
       UNION ALL SELECT 'vip', CONCAT('S-', LPAD(seq, 9, '0')) FROM seq_1_to_${runs} WHERE seq % 10000 = 0`,
    );
    const [n] = await c.query<Array<{ n: bigint }>>(`SELECT count(*) AS n FROM durable_run_tags WHERE tag = 'vip'`);
    if (Number(n.n) !== Math.floor(runs / 10_000)) throw new Error(`durable_run_tags holds ${n.n} vip rows`);
    await c.query('ANALYZE TABLE durable_runs, durable_run_tags');
  });
}

export async function runSearchBench(argv: string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      runs: { type: 'string', default: '200000' },
      reps: { type: 'string', default: '5' },
      'pg-url': PG_URL_OPTION,
      'mariadb-url': { type: 'string', default: process.env.BENCH_MARIADB_URL ?? 'mysql://root@127.0.0.1:3306' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (a.help) {
    process.stdout.write(
      'usage: npm run bench -- search [--runs 200000] [--reps 5] [--pg-url postgres://postgres@127.0.0.1:5432]\n' +
        '       [--mariadb-url mysql://root@127.0.0.1:3306] [--db-prefix bench]   (database <prefix>_search on both, dropped at the end)\n',
    );
    return;
  }
  const runs = Number(a.runs);
  const reps = positiveInt('reps', a.reps);
  if (!Number.isInteger(runs) || runs < 10_000) throw new Error(`--runs must be an integer ≥ 10000, got ${a.runs}`);
  const log = (m: string) => process.stderr.write(`${m}\n`);
  const sides = [postgresSide(benchDbUrl(a['pg-url']!, 'search')), mariadbSide(benchDbUrl(a['mariadb-url']!, 'search'))];
  const medians = new Map<string, Map<string, number>>();
  for (const side of sides) {
    log(`[${side.db}] ${runs.toLocaleString('en')} finished runs…`);
    await side.recreate();
    const t0 = performance.now();
    await fill(side, runs);
    log(`[${side.db}] filled and analysed in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    const host = new OursHost({ url: side.url, steps: 1, concurrency: 1, dbWrite: false, worker: false, history: false, poolSize: 4 });
    await host.start();
    try {
      const admin = new AdminService(() => host.engine);
      const row = new Map<string, number>();
      for (const [label, query] of QUERIES) {
        const list = () => admin.listRuns(parseListQuery({ limit: '50', ...query }));
        await list(); // warm-up: the pages the query reads come into the buffer pool
        const ms: number[] = [];
        for (let i = 0; i < reps; i++) {
          const t = performance.now();
          await list();
          ms.push(performance.now() - t);
        }
        row.set(
          label,
          percentile(
            ms.sort((x, y) => x - y),
            50,
          ),
        );
        log(`[${side.db}] ${label}: ${row.get(label)!.toFixed(1)} ms`);
      }
      medians.set(side.db, row);
    } finally {
      await host.stop();
      await side.drop();
    }
  }
  const w = Math.max(...QUERIES.map(([l]) => l.length));
  process.stdout.write(
    `\nAdmin list (first page of 50 + per-status counts), median of ${reps}, over ${runs.toLocaleString('en')} finished runs\n`,
  );
  process.stdout.write(`${'query'.padEnd(w)}  ${'PostgreSQL ms'.padStart(14)}  ${'MariaDB ms'.padStart(11)}\n`);
  for (const [label] of QUERIES) {
    const pg = medians.get('postgres')!.get(label)!;
    const maria = medians.get('mariadb')!.get(label)!;
    process.stdout.write(`${label.padEnd(w)}  ${pg.toFixed(1).padStart(14)}  ${maria.toFixed(1).padStart(11)}\n`);
  }
}
