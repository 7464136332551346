/**
 * npm run drain-parts [-- --runs 20000 --batch 200 --rounds 10 --pg-url URL --db-prefix P]
 * What each part of a drained run's writes costs Postgres, measured by the server itself: `runs`
 * 1-step runs are started (startMany, history on), then the claim of a batch (CLAIM) and its end
 * with its step's checkpoint (FINISH_PLAIN_RUNS) are each executed under EXPLAIN ANALYZE, `rounds`
 * times after two rounds of warm-up, the claim rolled back and then claimed for real so the end
 * finds its runs held. Prints the statements' execution time per run (planning and the round trip
 * left out), for the schema as it is and with one part taken away at a time:
 *   - the five indexes of durable_runs that only the admin API, the dashboard and the live feed read
 *     (every claim and end writes an entry in each: the status changes, so no update is HOT);
 *   - the foreign key of durable_steps to durable_runs (checked for every step row written);
 *   - history (the 'claimed' and 'completed' rows of each run).
 * Execution times measured this way move by a few per cent between runs, less than the /proc CPU
 * figures of drain-costs: compare the lines of one run. Uses the database <prefix>_drain_parts.
 */
import { parseArgs } from 'node:util';
import { benchDbUrl, dropDatabase, takeDbPrefix } from './db.js';
import { endValues, filledQueue } from './drain-queue.js';
import { QUEUE, SQL, WORKFLOW } from './peers/ours-lib.js';
import { PG_URL_OPTION, positiveInt } from './cli-args.js';

takeDbPrefix(process.argv);
const { values: a } = parseArgs({
  options: {
    'pg-url': PG_URL_OPTION,
    runs: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '10' },
  },
});
const url = benchDbUrl(a['pg-url']!, 'drain_parts');
const runs = positiveInt('runs', a.runs);
const batch = positiveInt('batch', a.batch);
const rounds = positiveInt('rounds', a.rounds);
if (runs < batch * (rounds + 2)) throw new Error(`--runs must be at least --batch × (--rounds + 2) = ${batch * (rounds + 2)}`);

/** The indexes of durable_runs that serve only the admin views (lists by creation or update, status, workflow and id-prefix filters). */
const ADMIN_INDEXES = [
  'durable_runs_updated_idx',
  'durable_runs_status_created_idx',
  'durable_runs_workflow_created_idx',
  'durable_runs_id_pattern_idx',
  'durable_runs_created_idx',
];

interface Variant {
  label: string;
  /** Statements run on the filled database before the measurement. */
  setup: string[];
  history: boolean;
}
const VARIANTS: Variant[] = [
  { label: 'the schema as it is', setup: [], history: true },
  { label: 'without the five admin indexes', setup: ADMIN_INDEXES.map((i) => `DROP INDEX ${i}`), history: true },
  {
    label: "without durable_steps' foreign key",
    setup: ['ALTER TABLE durable_steps DROP CONSTRAINT durable_steps_run_id_fkey'],
    history: true,
  },
  { label: 'without history rows', setup: [], history: false },
];

/** The execution time EXPLAIN ANALYZE reports, ms. */
const executionMs = (plan: Array<Record<string, string>>): number => {
  const line = plan.map((r) => r['QUERY PLAN']).find((l) => l.startsWith('Execution Time:'));
  if (!line) throw new Error('EXPLAIN ANALYZE printed no execution time');
  return Number(/([\d.]+) ms/.exec(line)![1]);
};

/** Claim and end `rounds` batches on a fresh database in `v`'s form; µs per run of each statement. */
async function measure(v: Variant): Promise<{ claim: number; end: number }> {
  const c = await filledQueue(url, runs);
  try {
    for (const s of v.setup) await c.query(s);
    await c.query('ANALYZE');
    const claimValues = [QUEUE, batch, 'w', 600_000, [WORKFLOW], v.history];
    let claimMs = 0;
    let endMs = 0;
    for (let i = 0; i < rounds + 2; i++) {
      await c.query('BEGIN');
      const claimPlan = (await c.query({ text: `EXPLAIN (ANALYZE, COSTS off) ${SQL.CLAIM}`, values: claimValues })).rows;
      await c.query('ROLLBACK');
      const { rows } = await c.query<{ id: string; lease_epoch: number }>({ text: SQL.CLAIM, values: claimValues });
      if (rows.length !== batch) throw new Error(`a claim took ${rows.length} runs, not ${batch}`);
      const endPlan = (
        await c.query({ text: `EXPLAIN (ANALYZE, COSTS off) ${SQL.FINISH_PLAIN_RUNS}`, values: endValues(rows, v.history, false) })
      ).rows;
      if (i < 2) continue; // warm-up: caches, and the plans' first executions
      claimMs += executionMs(claimPlan);
      endMs += executionMs(endPlan);
    }
    const perRun = (ms: number) => (ms * 1000) / (rounds * batch);
    return { claim: perRun(claimMs), end: perRun(endMs) };
  } finally {
    await c.end();
  }
}

const lines: string[] = [];
let base: number | undefined;
const cell = (s: string, w: number) => s.padStart(w);
lines.push(`${'form'.padEnd(36)} | ${cell('CLAIM', 7)} | ${cell('END', 7)} | ${cell('total', 7)} | ${cell('saved', 6)}`);
for (const v of VARIANTS) {
  process.stderr.write(`drain-parts: ${v.label}…\n`);
  const r = await measure(v);
  const total = r.claim + r.end;
  base ??= total;
  const saved = v === VARIANTS[0] ? '' : `${(((base - total) / base) * 100).toFixed(0)} %`;
  lines.push(
    `${v.label.padEnd(36)} | ${cell(r.claim.toFixed(1), 7)} | ${cell(r.end.toFixed(1), 7)} | ${cell(total.toFixed(1), 7)} | ${cell(saved, 6)}`,
  );
}
await dropDatabase(url);
process.stdout.write(
  [
    `Claim and end of 1-step runs, batches of ${batch}, ${rounds} rounds: µs per run of the statements' execution (EXPLAIN ANALYZE)`,
    ...lines,
  ].join('\n') + '\n',
);
