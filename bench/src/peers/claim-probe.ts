/**
 * The claim statement on its own, as the scale measurements send it: `claimRuns` due runs
 * (startMany), then the engine's CLAIM (limit = `limit`) one at a time on one connection until the
 * queue is empty (latency p50/p99, runs claimed/s), then 200 claims on an empty queue (an idle poll,
 * and every claim that finds fewer due runs than its limit). The claimed runs are deleted afterwards.
 */
import type pg from 'pg';
import { percentiles } from '../stats.js';
import { OursHost, QUEUE, SQL, WORKFLOW, type HostConfig } from './ours-lib.js';
import { enqueueBulk } from './ours.js';

export interface ClaimRound {
  p50: number;
  p99: number;
  runsPerSec: number;
  emptyP50: number;
  emptyP99: number;
  statements: number;
  claimed: number;
}

export const claimParams = (limit: number, history: boolean) => [QUEUE, limit, 'bench-claimer', 30_000, [WORKFLOW], history];

/** EXPLAIN (ANALYZE, BUFFERS) of the claim inside a rolled-back transaction. */
export async function explainClaim(c: pg.Client, params: unknown[]): Promise<string> {
  await c.query('BEGIN');
  try {
    const r = await c.query(`EXPLAIN (ANALYZE, BUFFERS) ${SQL.CLAIM}`, params);
    return r.rows.map((x) => x['QUERY PLAN']).join('\n');
  } finally {
    await c.query('ROLLBACK');
  }
}

/** One round; `onFull`/`onEmpty` run with the queue full and empty (e.g. EXPLAIN), inside the round. */
export async function claimRound(
  c: pg.Client,
  cfg: HostConfig,
  claimRuns: number,
  params: unknown[],
  hooks: { onFull?: () => Promise<void>; onEmpty?: () => Promise<void> } = {},
): Promise<ClaimRound> {
  const client = new OursHost({ ...cfg, worker: false });
  await client.start();
  await enqueueBulk(client, 'claim-', claimRuns, '');
  await client.stop();
  await hooks.onFull?.();
  const lat: number[] = [];
  let claimed = 0;
  const t0 = performance.now();
  for (;;) {
    const s = performance.now();
    const r = await c.query(SQL.CLAIM, params);
    lat.push(performance.now() - s);
    claimed += r.rowCount ?? 0;
    if (!r.rowCount) break;
  }
  const runsPerSec = claimed / ((performance.now() - t0) / 1000);
  const full = percentiles(lat.slice(0, -1), [50, 99]);
  const empty: number[] = [];
  for (let i = 0; i < 200; i++) {
    const s = performance.now();
    await c.query(SQL.CLAIM, params);
    empty.push(performance.now() - s);
  }
  const e = percentiles(empty, [50, 99]);
  await hooks.onEmpty?.();
  await c.query(`DELETE FROM durable_run_events WHERE run_id LIKE 'claim-%'`);
  await c.query(`DELETE FROM durable_runs WHERE id LIKE 'claim-%'`);
  await c.query('VACUUM ANALYZE durable_runs');
  return { p50: full.p50, p99: full.p99, runsPerSec, emptyP50: e.p50, emptyP99: e.p99, statements: lat.length, claimed };
}
