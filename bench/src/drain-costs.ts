/**
 * npm run drain-costs [-- --runs 20000 --batch 200 --without-indexes NAME,… --full-end --not-kept --pg-url URL --db-prefix P]
 * What a drain of 1-step workflows costs Postgres per run, statement by statement, with nothing else
 * on the machine's cores: `runs` runs are started (startMany, history on) and analyzed, then one
 * connection claims them in batches of `batch` (CLAIM) and ends each batch with its step checkpoint
 * (FINISH_RUNS), as a worker does, with the engine's statement texts prepared once (named), until
 * the queue is empty (the tables are analyzed whenever the runs ended have doubled, as in
 * autoanalyze.ts). Prints, per run, the wall time and the CPU time of that connection's backend
 * (from /proc, Linux only), with Postgres choosing its plans as it does for the engine, then again
 * on a fresh table with every plan generic (plan_cache_mode = force_generic_plan, what a prepared
 * statement settles on after five calls when it costs no more than the custom plans): a statement
 * whose plan grows with the square of the batch shows there. Uses the database <prefix>_drain_costs.
 * --without-indexes drops those indexes of the schema before the drain: what each index the admin
 * views read costs the hot path (every claim and end writes an entry in every index whose
 * predicate the new row version meets). The runs are top-level and kept, so the engine ends them
 * with FINISH_PLAIN_RUNS; --full-end sends FINISH_RUNS instead (its form for batches with children,
 * runs not kept or cancelled ones), to see what the CTEs those need cost. --not-kept ends them as runs
 * not kept (@Workflow({ deleteOnSuccess })), as the engine does: FINISH_RUNS deleting them, then
 * DELETE_LEFTOVERS (counted in the end's figures).
 */
import { parseArgs } from 'node:util';
import { benchDbUrl, dropDatabase, takeDbPrefix } from './db.js';
import { endValues, filledQueue } from './drain-queue.js';
import { processCpuSeconds } from './pg-cpu.js';
import { QUEUE, SQL, WORKFLOW } from './peers/ours-lib.js';
import { PG_URL_OPTION, positiveInt } from './cli-args.js';

takeDbPrefix(process.argv);
const { values: a } = parseArgs({
  options: {
    'pg-url': PG_URL_OPTION,
    runs: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '200' },
    'without-indexes': { type: 'string', default: '' },
    'full-end': { type: 'boolean', default: false },
    'not-kept': { type: 'boolean', default: false },
  },
});
const url = benchDbUrl(a['pg-url']!, 'drain_costs');
const runs = positiveInt('runs', a.runs);
const batch = positiveInt('batch', a.batch);
const dropped = a['without-indexes']!.split(',').filter(Boolean);
const notKept = a['not-kept']!;
const END = a['full-end'] || notKept ? 'FINISH_RUNS' : 'FINISH_PLAIN_RUNS';
for (const name of dropped) {
  if (!/^durable_[a-z_]+_idx$/.test(name))
    throw new Error(`--without-indexes: "${name}" is not one of the schema's index names (durable_…_idx)`);
}

interface Cost {
  wallMs: number;
  cpuS: number;
}

/** Fills the queue, then drains it on one connection; the cost of each statement, summed. */
async function drain(plans: 'auto' | 'generic'): Promise<{ claim: Cost; end: Cost; ended: number }> {
  const c = await filledQueue(url, runs);
  try {
    for (const name of dropped) await c.query(`DROP INDEX ${name}`);
    await c.query('ANALYZE');
    if (plans === 'generic') await c.query('SET plan_cache_mode = force_generic_plan');
    const pid = (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    const claim = { wallMs: 0, cpuS: 0 };
    const end = { wallMs: 0, cpuS: 0 };
    const timed = async <T>(into: Cost, send: () => Promise<T>): Promise<T> => {
      const cpu = processCpuSeconds(pid);
      const t0 = performance.now();
      const r = await send();
      into.wallMs += performance.now() - t0;
      into.cpuS += processCpuSeconds(pid) - cpu;
      return r;
    };
    let ended = 0;
    let analyzedAt = 0;
    for (;;) {
      const { rows } = await timed(claim, () =>
        c.query<{ id: string; lease_epoch: number }>({
          name: 'claim',
          text: SQL.CLAIM,
          values: [QUEUE, batch, 'w', 600_000, [WORKFLOW], true],
        }),
      );
      if (!rows.length) break;
      await timed(end, async () => {
        await c.query({ name: 'end', text: SQL[END], values: endValues(rows, true, notKept) });
        if (notKept) await c.query({ name: 'leftovers', text: SQL.DELETE_LEFTOVERS, values: [rows.map((r) => r.id)] });
      });
      ended += rows.length;
      // Statistics as a server keeps them (see autoanalyze.ts), outside the timings: a plan made when
      // durable_steps was empty would look each claimed run's steps up with a sequential scan.
      if (ended >= 2 * analyzedAt) {
        await c.query('ANALYZE durable_runs, durable_steps, durable_run_events');
        analyzedAt = ended;
      }
    }
    return { claim, end, ended };
  } finally {
    await c.end();
  }
}

/** A line of the table: the plans column left-aligned, the figures right-aligned under their headers. */
const row = (cells: string[]) => cells.map((c, i) => (i ? c.padStart(11) : c.padEnd(7))).join(' | ');
const lines: string[] = [];
for (const plans of ['auto', 'generic'] as const) {
  process.stderr.write(`drain-costs: ${runs} runs, batches of ${batch}, ${plans} plans…\n`);
  const r = await drain(plans);
  const us = (ms: number) => ((ms * 1000) / r.ended).toFixed(1);
  const cpu = (s: number) => ((s * 1e6) / r.ended).toFixed(1);
  lines.push(row([plans, us(r.claim.wallMs), cpu(r.claim.cpuS), us(r.end.wallMs), cpu(r.end.cpuS), us(r.claim.wallMs + r.end.wallMs)]));
}
await dropDatabase(url);
process.stdout.write(
  [
    `Drain of ${runs} 1-step runs${notKept ? ' not kept' : ''} on one connection, batches of ${batch}: µs per run (wall; CPU of the backend)` +
      (dropped.length ? `, without the indexes ${dropped.join(', ')}` : ''),
    row(['plans', 'CLAIM', 'its CPU', notKept ? `${END} + DELETE_LEFTOVERS` : END, 'its CPU', 'total']),
    ...lines,
  ].join('\n') + '\n',
);
