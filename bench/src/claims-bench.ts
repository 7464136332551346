/**
 * npm run bench -- claims [--backlog 100000] [--keys 10000] [--finished 0] [--batch 10] [--claimers 3]
 *                         [--seconds 10] [--global 30] [--key-limit 1] [--pg-url URL]  (database <db-prefix>_claims)
 * The cost of a claim with flow control: a backlog of --backlog pending runs spread over --keys
 * concurrency keys (and --finished finished runs beside them), claimed by --claimers loops at once,
 * each claiming --batch runs and finishing them (one UPDATE, not timed), for --seconds per mode:
 *   plain    the queue has no limits: CLAIM (store/leases.ts), the path of every queue without limits
 *   limited  the queue has limits (--global queue-wide, --key-limit per key): lock the limits row,
 *            CLAIM_LIMITED (store/flow-claim.ts), in one transaction; keys take turns
 * Prints per mode the claim latency p50/p99 (client side: the whole claim, transaction included),
 * runs claimed per second, and the runs per claim. Each mode has its own queue with its own copy of
 * the backlog, so both start from the same state. The database (`<db-prefix>_claims`, default bench_claims) is recreated,
 * and dropped at the end.
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { claim } from '../../libs/durable/src/store/leases.js';
import { claimLimited } from '../../libs/durable/src/store/flow-claim.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { createStore, type Store } from '../../libs/durable/src/store/store.js';
import { benchDbUrl, dropDatabase, recreateDatabase, withClient } from './db.js';
import { createSchema } from './peers/ours-lib.js';
import { percentile } from './stats.js';
import { PG_URL_OPTION } from './cli-args.js';

const WORKFLOW = 'claimed';
type Mode = 'plain' | 'limited';

interface ModeFigures {
  mode: Mode;
  claims: number;
  runs: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
}

export async function runClaimsBench(argv: string[]): Promise<void> {
  const { values: a } = parseArgs({
    args: argv,
    options: {
      backlog: { type: 'string', default: '100000' },
      keys: { type: 'string', default: '10000' },
      finished: { type: 'string', default: '0' },
      batch: { type: 'string', default: '10' },
      claimers: { type: 'string', default: '3' },
      seconds: { type: 'string', default: '10' },
      global: { type: 'string', default: '30' },
      'key-limit': { type: 'string', default: '1' },
      'pg-url': PG_URL_OPTION,
    },
  });
  const n = (k: keyof typeof a) => Number(a[k]);
  const url = benchDbUrl(a['pg-url']!, 'claims');
  await recreateDatabase(url);
  await createSchema(url);
  const t0 = Date.now();
  await withClient(url, async (c) => {
    for (const queue of ['plain', 'limited'] as Mode[]) {
      await c.query(
        `INSERT INTO durable_runs (id, workflow_name, queue, input, concurrency_key)
         SELECT $1 || '-' || i, $2, $1, '{}', 'key-' || (i % $4) FROM generate_series(1, $3) i`,
        [queue, WORKFLOW, n('backlog'), n('keys')],
      );
    }
    await c.query(
      `INSERT INTO durable_runs (id, workflow_name, queue, status, input, finished_at, concurrency_key)
       SELECT 'done-' || i, $1, 'plain', 'SUCCEEDED', '{}', now(), 'key-' || (i % $3) FROM generate_series(1, $2) i`,
      [WORKFLOW, n('finished'), n('keys')],
    );
    await c.query(`INSERT INTO durable_queue_limits (queue, global_concurrency, key_concurrency) VALUES ('limited', $1, $2)`, [
      n('global'),
      n('key-limit'),
    ]);
    await c.query('VACUUM ANALYZE durable_runs'); // statistics now, whatever the server's autovacuum does
  });
  process.stderr.write(
    `generated 2 × ${n('backlog')} pending runs over ${n('keys')} keys, ${n('finished')} finished, in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`,
  );

  const pool = new pg.Pool({ connectionString: url, max: n('claimers') * 2 + 2 });
  const store: Store = createStore(pgSqlClient(pool, { prepared: false }), { history: true });
  const out: ModeFigures[] = [];
  try {
    for (const mode of ['plain', 'limited'] as Mode[]) out.push(await measure(mode, store, pool, n('batch'), n('claimers'), n('seconds')));
  } finally {
    await pool.end();
    await dropDatabase(url);
  }
  process.stdout.write(
    `claims: backlog ${n('backlog')} pending runs over ${n('keys')} keys (+${n('finished')} finished), ${n('claimers')} claimers × batch ${n('batch')}, ` +
      `limited = ${n('global')} at once, ${n('key-limit')} per key\n`,
  );
  for (const f of out) {
    process.stdout.write(
      `  ${f.mode.padEnd(8)} claim p50 ${f.p50Ms.toFixed(2)} ms, p99 ${f.p99Ms.toFixed(2)} ms; ${Math.round(f.runs / f.seconds)} runs/s ` +
        `(${f.claims} claims, ${(f.runs / Math.max(1, f.claims)).toFixed(1)} runs each, ${f.seconds.toFixed(1)} s)\n`,
    );
  }
}

/** `claimers` loops for `seconds`: claim up to `batch` runs of the mode's queue, then finish them. */
async function measure(mode: Mode, store: Store, pool: pg.Pool, batch: number, claimers: number, seconds: number): Promise<ModeFigures> {
  const latencies: number[] = [];
  let runs = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: claimers }, async (_, i) => {
      const owner = `${mode}-claimer-${i}`;
      while (performance.now() < end) {
        const t = performance.now();
        const claimed =
          mode === 'plain'
            ? await claim(store, { queue: mode, limit: batch, owner, leaseMs: 60_000, workflows: [WORKFLOW] })
            : (await claimLimited(store, { queue: mode, limit: batch, owner, leaseMs: 60_000, workflows: [WORKFLOW] })).runs;
        latencies.push(performance.now() - t);
        runs += claimed.length;
        // The runs end: their slots free (what an executor's completion does, minus the checkpoints).
        if (claimed.length)
          await pool.query(`UPDATE durable_runs SET status = 'SUCCEEDED', finished_at = now(), lease_owner = NULL WHERE id = ANY($1)`, [
            claimed.map((r) => r.id),
          ]);
      }
    }),
  );
  const sorted = latencies.sort((x, y) => x - y);
  return {
    mode,
    claims: latencies.length,
    runs,
    seconds: (performance.now() - t0) / 1000,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
  };
}
