/**
 * npm run drain-timeline [-- --runs 20000 --steps 1 --concurrency 200 --pg-url URL --db-prefix P]
 * Where a drain's wall time goes between the worker and Postgres: `runs` runs of `steps` steps are
 * started (startMany, history on) and analyzed, then a worker in this process (pool 25, as in the
 * jobs comparison) drains them while every statement its pool sends is timed. Prints the drain's
 * runs/s (first run started → none unfinished); per statement: how many, rows per statement, and its
 * round trip (timed in the worker's event loop) when it was the only statement in flight and when
 * others were; the share of the drain with no statement in flight (the worker's own turn: executing the
 * claimed runs, building the next statements — Postgres idles), one, and two or more; and the time
 * from a claim's answer to the next claim (a claim asks only for free slots, so it waits for the
 * runs it brought to execute and give their slots back). Uses the database <prefix>_drain_timeline.
 */
import { parseArgs } from 'node:util';
import { benchDbUrl, dropDatabase, recreateDatabase, takeDbPrefix } from './db.js';
import { createSchema, OursHost, WORKFLOW } from './peers/ours-lib.js';
import { PG_URL_OPTION, positiveInt } from './cli-args.js';

takeDbPrefix(process.argv);
const { values: a } = parseArgs({
  options: {
    'pg-url': PG_URL_OPTION,
    runs: { type: 'string', default: '20000' },
    steps: { type: 'string', default: '1' },
    concurrency: { type: 'string', default: '200' },
  },
});
const url = benchDbUrl(a['pg-url']!, 'drain_timeline');
const [runs, steps, concurrency] = (['runs', 'steps', 'concurrency'] as const).map((k) => positiveInt(k, a[k]));

interface Span {
  name: string;
  sent: number;
  done: number;
  rows: number;
}

await recreateDatabase(url);
await createSchema(url);
const client = new OursHost({ url, steps, concurrency, dbWrite: false, worker: false, history: true, poolSize: 10 });
await client.start();
process.stderr.write(`drain-timeline: starting ${runs} runs of ${steps} step(s)…\n`);
for (let i = 0; i < runs; i += 1000) {
  const ids = Array.from({ length: Math.min(1000, runs - i) }, (_, k) => `t${i + k}`);
  await client.engine.startMany(ids.map((id) => ({ workflow: WORKFLOW, input: '', options: { id } })));
}
await client.engine.storeForTools.sql.query('ANALYZE');

const spans: Span[] = [];
let first = Infinity;
const workers = new OursHost(
  { url, steps, concurrency, dbWrite: false, worker: true, history: true, poolSize: 25 },
  undefined,
  () => (first = Math.min(first, performance.now())),
  (name, sent, done, rows) => spans.push({ name, sent, done, rows }),
);
process.stderr.write(`drain-timeline: draining with concurrency ${concurrency}…\n`);
await workers.start();
const unfinished = async () =>
  (
    await client.engine.storeForTools.sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM durable_runs WHERE status IN ('PENDING', 'RUNNING')`,
    )
  )[0].n;
for (let n = await unfinished(); n > 0; n = await unfinished()) await new Promise((ok) => setTimeout(ok, n > 500 ? 100 : 5));
const last = performance.now();
await workers.stop();
await client.stop();
await dropDatabase(url);

// The drain's statements: from the first claim to the end, without those of starting and stopping.
const firstClaim = Math.min(...spans.filter((s) => s.name === 'CLAIM').map((s) => s.sent));
const drain = spans.filter((s) => s.sent >= firstClaim && s.done <= last);
// In flight over time: +1 at each send, -1 at each answer, swept in time order.
const edges = drain
  .flatMap((s) => [
    { t: s.sent, d: 1 },
    { t: s.done, d: -1 },
  ])
  .sort((x, y) => x.t - y.t || x.d - y.d);
const byDepth = [0, 0, 0];
let depth = 0;
let at = firstClaim;
for (const e of edges) {
  byDepth[Math.min(depth, 2)] += e.t - at;
  depth += e.d;
  at = e.t;
}
byDepth[0] += last - at;
const wall = last - firstClaim;
const alone = (s: Span) => !drain.some((o) => o !== s && o.sent < s.done && o.done > s.sent);

const names = [...new Set(drain.map((s) => s.name))].filter((n) => drain.filter((s) => s.name === n).length >= 5);
const mean = (xs: number[]) => (xs.length ? xs.reduce((p, x) => p + x, 0) / xs.length : NaN);
const median = (xs: number[]) => (xs.length ? [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] : NaN);
const ms = (x: number) => (Number.isNaN(x) ? '–' : x.toFixed(1));
const rows = names.map((n) => {
  const of = drain.filter((s) => s.name === n);
  const [solo, shared] = [of.filter(alone), of.filter((s) => !alone(s))];
  const rt = (xs: Span[]) => mean(xs.map((s) => s.done - s.sent));
  return [
    n,
    String(of.length),
    mean(of.map((s) => s.rows)).toFixed(0),
    `${ms(rt(solo))} (${solo.length})`,
    `${ms(rt(shared))} (${shared.length})`,
  ];
});
const claims = drain.filter((s) => s.name === 'CLAIM').sort((x, y) => x.sent - y.sent);
const claimGaps = claims.slice(1).map((c, i) => c.sent - claims[i].done);
const pct = (x: number) => `${Math.round((100 * x) / wall)} %`;
const header = ['statement', 'count', 'rows each', 'ms alone (n)', 'ms with others (n)'];
const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
const line = (cells: string[]) => cells.map((c, i) => (i ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(' | ');
process.stdout.write(
  [
    `Drain of ${runs} runs of ${steps} step(s), concurrency ${concurrency}, pool 25: ${Math.round(runs / ((last - first) / 1000))} runs/s`,
    line(header),
    ...rows.map(line),
    `Share of the drain (${(wall / 1000).toFixed(2)} s from the first claim) with no statement in flight: ${pct(byDepth[0])}, ` +
      `one: ${pct(byDepth[1])}, two or more: ${pct(byDepth[2])}`,
    `From a claim's answer to the next claim: ${ms(mean(claimGaps))} ms on average, median ${ms(median(claimGaps))}`,
  ].join('\n') + '\n',
);
