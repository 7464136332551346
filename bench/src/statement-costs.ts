/**
 * npm run statement-costs [-- --pg-url URL --reps 200]
 * Server-side cost of each statement on the hot path of a 3-step workflow, as the engine sends it
 * (store/sql.ts text, the pg driver's unnamed statements: parsed and planned on every call):
 * EXPLAIN (ANALYZE) inside a rolled-back transaction, `reps` times; median planning and execution
 * time. Also the client-side round trip of the statement, unnamed vs named (prepared once per
 * connection). Uses the database bench_stmt (dropped at the end).
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { benchDbUrl, dropDatabase, recreateDatabase, takeDbPrefix } from './db.js';
import { createSchema, QUEUE, SQL, WORKFLOW } from './peers/ours-lib.js';
import { percentile } from './stats.js';
import { PG_URL_OPTION } from './cli-args.js';

takeDbPrefix(process.argv);
const { values: a } = parseArgs({
  options: {
    'pg-url': PG_URL_OPTION,
    reps: { type: 'string', default: '200' },
    history: { type: 'string', default: 'on' },
  },
});
const url = benchDbUrl(a['pg-url']!, 'stmt');
const reps = Number(a.reps);
const history = a.history !== 'off';
const median = (xs: number[]) =>
  percentile(
    [...xs].sort((x, y) => x - y),
    50,
  );

await recreateDatabase(url);
await createSchema(url);
const c = new pg.Client({ connectionString: url });
await c.connect();

/** A RUNNING run leased with epoch 1, one step recorded, for the statements that need one. */
async function setup(id: string): Promise<void> {
  await c.query(SQL.INSERT_RUNS_CLAIMED, claimedParams(id));
}

/** INSERT_RUNS_CLAIMED's parameters for one run (arrays of one) leased to worker 'w' for 30 s. */
function claimedParams(id: string): unknown[] {
  return [[id], [WORKFLOW], [QUEUE], ['"x"'], [0], 'w', 30000, [null], [null], null, history, [null], [null], ['[]'], [null]];
}

/** INSERT_RUN's parameters for one due run (app version `version`). */
function runParams(id: string, version: string | null = null): unknown[] {
  return [id, WORKFLOW, QUEUE, '"x"', 0, null, null, null, null, version, history, null, null, [], null];
}

interface Case {
  name: string;
  /** Statement and parameters; `i` makes ids unique. */
  make: (i: number) => [string, unknown[]];
  /** Rows to create first (outside the measured statement). */
  prepare?: (i: number) => Promise<void>;
}

const cases: Case[] = [
  {
    name: 'INSERT_RUN (start, not claimed)',
    make: (i) => [SQL.INSERT_RUN, runParams(`r${i}`)],
  },
  {
    name: 'INSERT_RUNS_CLAIMED (fast path, 1 run)',
    make: (i) => [SQL.INSERT_RUNS_CLAIMED, claimedParams(`f${i}`)],
  },
  {
    name: 'CLAIM (limit 10, 1 due run)',
    prepare: async (i) => void (await c.query(SQL.INSERT_RUN, runParams(`c${i}`))),
    make: () => [SQL.CLAIM, [QUEUE, 10, 'w', 30000, [WORKFLOW], history]],
  },
  {
    // The claim of a worker with the engine option runVersions (a statement of its own: CLAIM is unchanged).
    name: 'CLAIM_VERSIONS (limit 10, 1 due run of version 1)',
    prepare: async (i) => void (await c.query(SQL.INSERT_RUN, runParams(`v${i}`, '1'))),
    make: () => [SQL.CLAIM_VERSIONS, [QUEUE, 10, 'w', 30000, [WORKFLOW], history, ['1']]],
  },
  {
    name: 'INSERT_STEPS (1 checkpoint)',
    prepare: (i) => setup(`b${i}`),
    make: (i) => [
      SQL.INSERT_STEPS,
      [[`b${i}`], [1], [0], ['benchStep'], ['SUCCEEDED'], ['0'], [null], [1], [0.1], [null], [null], history],
    ],
  },
  {
    name: 'FINISH_RUNS (1 run)',
    prepare: (i) => setup(`e${i}`),
    make: (i) => [SQL.FINISH_RUNS, [[`e${i}`], [1], ['SUCCEEDED'], ['0'], [null], ...new Array(11).fill([]), history, [`e${i}`], [false]]],
  },
  {
    // A workflow that returns right after its step: the checkpoint goes with the end (one statement instead of two).
    name: 'FINISH_RUNS (1 run with its last checkpoint)',
    prepare: (i) => setup(`k${i}`),
    make: (i) => [
      SQL.FINISH_RUNS,
      [
        [`k${i}`],
        [1],
        ['SUCCEEDED'],
        ['0'],
        [null],
        [`k${i}`],
        [1],
        [0],
        ['benchStep'],
        ['SUCCEEDED'],
        ['0'],
        [null],
        [1],
        [0.1],
        [null],
        [null],
        history,
        [`k${i}`],
        [false],
      ],
    ],
  },
];

const out: string[] = [];
for (const k of cases) {
  const plan: number[] = [];
  const exec: number[] = [];
  const rtUnnamed: number[] = [];
  const rtNamed: number[] = [];
  for (let i = 0; i < reps; i++) {
    for (const mode of ['explain', 'unnamed', 'named'] as const) {
      await c.query('BEGIN');
      await k.prepare?.(i);
      const [text, params] = k.make(i);
      if (mode === 'explain') {
        const r = await c.query(`EXPLAIN (ANALYZE, SUMMARY) ${text}`, params);
        const lines = r.rows.map((x) => x['QUERY PLAN'] as string);
        plan.push(Number(/Planning Time: ([\d.]+)/.exec(lines.join('\n'))![1]));
        exec.push(Number(/Execution Time: ([\d.]+)/.exec(lines.join('\n'))![1]));
      } else {
        const t0 = performance.now();
        await c.query(mode === 'named' ? { name: `m_${k.name.split(' ')[0]}`, text, values: params } : { text, values: params });
        (mode === 'named' ? rtNamed : rtUnnamed).push(performance.now() - t0);
      }
      await c.query('ROLLBACK');
    }
  }
  out.push(
    `${k.name.padEnd(34)} planning ${median(plan).toFixed(3)} ms, execution ${median(exec).toFixed(3)} ms; ` +
      `round trip unnamed ${median(rtUnnamed).toFixed(3)} ms, named/prepared ${median(rtNamed).toFixed(3)} ms`,
  );
}
await c.end();
await dropDatabase(url);
process.stdout.write(
  `statement costs (median of ${reps}, history ${history ? 'on' : 'off'}, no commit: each inside a rolled-back transaction)\n${out.join('\n')}\n`,
);
