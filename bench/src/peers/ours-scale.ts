/**
 * Scale: does the claim stay fast when the runs table is big? Three cases, each on the same
 * dedicated database (dropped at the end), the table emptied (TRUNCATE) between cases:
 *   - empty;
 *   - `finished` (default 1,000,000) SUCCEEDED runs of the same workflow and queue, created by
 *     one INSERT ... SELECT generate_series (not through the engine), finished within the last
 *     day (inside the default 14-day retention, so the sweeper leaves them alone);
 *   - `waiting` (default 100,000) WAITING runs (sleeping: available_at 1 h+ in the future) of the
 *     same workflow and queue. These ARE in the partial claim index.
 * After a fill: VACUUM ANALYZE and CHECKPOINT (the steady state autovacuum would reach).
 * In each case:
 *   1. claim statement, 3 rounds (median reported): `claimRuns` due runs (startMany), then the
 *      engine's CLAIM statement (store/sql.ts, limit = concurrency) sent one at a time until the
 *      queue is empty: latency p50/p99 and runs claimed/s; then 200 claims on an empty queue (the
 *      cost of an idle poll, and of every claim that finds fewer due runs than its limit).
 *      EXPLAIN (ANALYZE, BUFFERS) of both (first round), inside a rolled-back transaction;
 *   2. the full workload: startMany N, workers drain it; workflows/s from the timestamps.
 */
import pg from 'pg';
import { databaseName, dropDatabase, recreateDatabase } from '../db.js';
import { peerPoolSize } from '../figures.js';
import { percentile } from '../stats.js';
import { claimParams as claimParamsFor, claimRound, explainClaim as explainOf, type ClaimRound } from './claim-probe.js';
import { createSchema, OursHost, QUEUE, WORKFLOW, type HostConfig } from './ours-lib.js';
import { enqueueBulk, readTimings, untilDone } from './ours.js';
import { startWorkers } from './ours-workers.js';

export interface ScaleOpts {
  databaseUrl: string;
  workflows: number;
  steps: number;
  concurrency: number;
  processes: number;
  history: boolean;
  pollIntervalMs?: number;
  finished: number;
  waiting: number;
  claimRuns?: number;
  log?: (m: string) => void;
}

export interface ScaleCase {
  name: string;
  fillRows: number;
  fillSeconds: number;
  tableMiB: number;
  /** Median over the rounds of each figure; roundsP50Ms: every round's p50. */
  claim: {
    p50Ms: number;
    p99Ms: number;
    runsPerSec: number;
    emptyP50Ms: number;
    emptyP99Ms: number;
    statements: number;
    roundsP50Ms: number[];
  };
  drainWorkflowsPerSec: number;
  explainClaim: string;
  explainEmptyClaim: string;
}

export interface ScaleResult {
  claimRuns: number;
  claimLimit: number;
  cases: ScaleCase[];
  /** case / empty, for each non-empty case. */
  ratios: Record<string, { claimP50: number; claimRunsPerSec: number; emptyClaimP50: number; drainWorkflowsPerSec: number }>;
}

const FILL_FINISHED = `
INSERT INTO durable_runs (id, workflow_name, queue, status, input, output, priority, available_at, lease_epoch, attempt,
                          created_at, started_at, finished_at, updated_at)
SELECT 'done-' || g, $2, $3, 'SUCCEEDED', '"x"'::jsonb, '1'::jsonb, 0, t, 1, 1, t, t + interval '5 ms', t + interval '20 ms', t + interval '20 ms'
FROM generate_series(1, $1::int) g
CROSS JOIN LATERAL (SELECT now() - interval '23 hours' + g * (interval '22 hours' / $1::int)) x(t)`;

const FILL_WAITING = `
INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, lease_epoch, attempt,
                          created_at, started_at, updated_at)
SELECT 'wait-' || g, $2, $3, 'WAITING', '"x"'::jsonb, 0, now() + interval '1 hour' + g * interval '1 millisecond', 1, 1,
       now() - interval '1 minute', now() - interval '1 minute', now() - interval '1 minute'
FROM generate_series(1, $1::int) g`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Rounds of the claim measurement per case. */
const ROUNDS = 3;

export async function runScale(opts: ScaleOpts): Promise<ScaleResult> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`[scale] ${m}\n`));
  const url = opts.databaseUrl;
  const claimRuns = opts.claimRuns ?? 2000;
  const limit = opts.concurrency;
  const cfg = (worker: boolean): HostConfig => ({
    url,
    steps: opts.steps,
    concurrency: opts.concurrency,
    dbWrite: false,
    worker,
    history: opts.history,
    pollIntervalMs: opts.pollIntervalMs,
    poolSize: peerPoolSize(opts.concurrency),
  });
  const claimParams = claimParamsFor(limit, opts.history);

  log(`recreating database ${databaseName(url)} (dropped at the end)`);
  await recreateDatabase(url);
  await createSchema(url);
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const cases: ScaleCase[] = [];
  try {
    const plan: Array<{ name: string; rows: number; sql?: string }> = [
      { name: 'empty', rows: 0 },
      { name: `${opts.finished.toLocaleString('en-US')} finished`, rows: opts.finished, sql: FILL_FINISHED },
      { name: `${opts.waiting.toLocaleString('en-US')} waiting`, rows: opts.waiting, sql: FILL_WAITING },
    ];
    for (const k of plan) {
      if (k.rows === 0 && k.sql) continue;
      log(`case "${k.name}": emptying the tables${k.sql ? `, inserting ${k.rows} rows (one INSERT ... SELECT generate_series)` : ''}`);
      await c.query('TRUNCATE durable_runs, durable_steps, durable_run_events, durable_messages, durable_events');
      const f0 = performance.now();
      if (k.sql) await c.query(k.sql, [k.rows, WORKFLOW, QUEUE]);
      const fillSeconds = (performance.now() - f0) / 1000;
      await c.query('VACUUM ANALYZE durable_runs');
      await c.query('CHECKPOINT');
      const {
        rows: [sz],
      } = await c.query(`SELECT pg_total_relation_size('durable_runs') AS b`);
      const tableMiB = Number(sz.b) / 2 ** 20;
      log(`  filled in ${fillSeconds.toFixed(1)} s; durable_runs with its indexes: ${tableMiB.toFixed(0)} MiB`);

      // 1. the claim statement, in `rounds` rounds (the median round is reported: robust to a
      //    neighbour's load spike on a shared machine)
      const rounds: ClaimRound[] = [];
      let explainClaim = '';
      let explainEmptyClaim = '';
      for (let round = 0; round < ROUNDS; round++) {
        const r = await claimRound(c, cfg(false), claimRuns, claimParams, {
          onFull: round ? undefined : async () => void (explainClaim = await explainOf(c, claimParams)),
          onEmpty: round ? undefined : async () => void (explainEmptyClaim = await explainOf(c, claimParams)),
        });
        if (r.claimed !== claimRuns) log(`  WARNING: claimed ${r.claimed} of ${claimRuns}`);
        rounds.push(r);
      }
      const med = (f: (r: (typeof rounds)[number]) => number) =>
        percentile(
          rounds.map(f).sort((x, y) => x - y),
          50,
        );
      const claim = {
        p50Ms: med((r) => r.p50),
        p99Ms: med((r) => r.p99),
        runsPerSec: med((r) => r.runsPerSec),
        emptyP50Ms: med((r) => r.emptyP50),
        emptyP99Ms: med((r) => r.emptyP99),
        statements: rounds[0].statements,
        roundsP50Ms: rounds.map((r) => Number(r.p50.toFixed(3))),
      };
      log(
        `  claim (limit ${limit}), median of ${ROUNDS} rounds: p50 ${claim.p50Ms.toFixed(2)} ms (rounds ${claim.roundsP50Ms.join(', ')}), ` +
          `p99 ${claim.p99Ms.toFixed(2)} ms, ${claim.runsPerSec.toFixed(0)} runs/s; empty-queue claim p50 ${claim.emptyP50Ms.toFixed(2)} ms`,
      );

      // 2. the full workload
      const prefix = `scale${cases.length}-`;
      const enq = new OursHost(cfg(false));
      await enq.start();
      await enqueueBulk(enq, prefix, opts.workflows, '');
      await enq.stop();
      const ws = await startWorkers(cfg(true), opts.processes);
      await untilDone(ws, opts.workflows, opts.databaseUrl, (m) => log(m));
      await ws.stop();
      await sleep(100);
      const t = await readTimings(url, prefix);
      const drainWps = opts.workflows / ((Math.max(...t.map((x) => x.finished)) - Math.min(...t.map((x) => x.started))) / 1000);
      log(`  drain of ${opts.workflows} x ${opts.steps}: ${drainWps.toFixed(0)} workflows/s`);
      cases.push({
        name: k.name,
        fillRows: k.rows,
        fillSeconds,
        tableMiB,
        claim,
        drainWorkflowsPerSec: drainWps,
        explainClaim,
        explainEmptyClaim,
      });
    }
  } finally {
    await c.end();
    await dropDatabase(url);
    log('dropped the scale database');
  }
  const base = cases[0];
  const ratios: ScaleResult['ratios'] = {};
  for (const k of cases.slice(1)) {
    ratios[k.name] = {
      claimP50: k.claim.p50Ms / base.claim.p50Ms,
      claimRunsPerSec: k.claim.runsPerSec / base.claim.runsPerSec,
      emptyClaimP50: k.claim.emptyP50Ms / base.claim.emptyP50Ms,
      drainWorkflowsPerSec: k.drainWorkflowsPerSec / base.drainWorkflowsPerSec,
    };
  }
  return { claimRuns, claimLimit: limit, cases, ratios };
}
