import type pg from 'pg';
import { BOUNCE_WORKFLOW, RATED_WORKFLOW, SINGLE_WORKFLOW, type ChaosSettings } from './chaos-config.js';
import { SINGLE_SERVER_TABLES, type DurableTables } from './chaos-tables.js';
import { byKey, maxOverlap, mostInWindow, type Interval } from '../support/intervals.js';

/**
 * Rate limit, singleton and debounce under the chaos: what the database says of their runs, what the
 * driver saw while they ran (keyDuplicates, sampled), and the judge.
 */

/** Keys that had two runs at once, as one snapshot of the database saw them (exact at that instant). */
export interface KeyDuplicate {
  kind: 'dedupe' | 'debounce';
  key: string;
  runs: number;
  at: number;
}

/**
 * One snapshot: dedupe keys with two active runs of a workflow, debounce keys with two runs not
 * started yet. The unique partial indexes (durable_runs_dedupe_idx, durable_runs_debounce_idx) serve it.
 */
export const keyDuplicates = (t: DurableTables = SINGLE_SERVER_TABLES) => `
SELECT 'dedupe' AS kind, dedupe_key AS key, count(*)::int AS runs FROM ${t.runs} r
WHERE dedupe_key IS NOT NULL AND status IN ('PENDING','RUNNING','WAITING') GROUP BY workflow_name, dedupe_key HAVING count(*) > 1
UNION ALL
SELECT 'debounce', debounce_key, count(*)::int FROM ${t.runs} r
WHERE debounce_key IS NOT NULL AND status = 'PENDING' AND started_at IS NULL GROUP BY workflow_name, debounce_key HAVING count(*) > 1`;

export interface KeyFacts {
  ratedStatuses: Record<string, number>;
  /** First starts of the rated runs (started_at, ms), in order: what the rate limit governs. */
  ratedStarts: number[];
  singleStatuses: Record<string, number>;
  /** Accepted executions of the singleton runs, keyed by dedupe key. */
  singleIntervals: Interval[];
  bounceStatuses: Record<string, number>;
  /** Starts that reached the database (a run created, or a pending run joined). */
  bounceStarts: number;
  /** Debounced runs that started before their time: the last start that joined them + period (or their maximum delay), less 1 ms. */
  earlyBounces: Array<{ id: string; startedAt: string; due: string }>;
  /** What the driver's snapshots saw (during the chaos and until the end). */
  duplicates: KeyDuplicate[];
}

const ms = (col: string) => `(extract(epoch from ${col}) * 1000)::float8`;

export async function loadKeyFacts(
  pool: pg.Pool,
  s: ChaosSettings,
  duplicates: KeyDuplicate[],
  t: DurableTables = SINGLE_SERVER_TABLES,
): Promise<KeyFacts> {
  const q = async <T>(sql: string, params: unknown[] = []) => (await pool.query(sql, params)).rows as T[];
  const statuses = async (workflow: string) =>
    Object.fromEntries(
      (
        await q<{ status: string; n: number }>(
          `SELECT status, count(*)::int AS n FROM ${t.runs} r WHERE workflow_name = $1 GROUP BY status`,
          [workflow],
        )
      ).map((r) => [r.status, r.n]),
    );
  const ratedStarts = (
    await q<{ t: number }>(
      `SELECT ${ms('started_at')} AS t FROM ${t.runs} r WHERE workflow_name = $1 AND started_at IS NOT NULL ORDER BY started_at`,
      [RATED_WORKFLOW],
    )
  ).map((r) => r.t);
  const singleIntervals = await q<Interval>(
    `SELECT s.run_id AS "runId", r.dedupe_key AS key, s.pid, ${ms('s.at')} AS start, ${ms('e.at')} AS "end"
     FROM test_ledger s JOIN test_ledger e ON e.run_id = s.run_id AND e.step = 'single:end'
     JOIN ${t.runs} r ON r.id = s.run_id WHERE s.step = 'single'`,
  );
  const [{ n: bounceStarts }] = await q<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${t.runEvents} e JOIN ${t.runs} r ON r.id = e.run_id
     WHERE r.workflow_name = $1 AND e.kind IN ('created', 'debounced')`,
    [BOUNCE_WORKFLOW],
  );
  const earlyBounces = await q<{ id: string; startedAt: string; due: string }>(
    `SELECT r.id, r.started_at::text AS "startedAt", x.due::text AS due FROM ${t.runs} r
     CROSS JOIN LATERAL (SELECT least(max(e.at) + $2::int * interval '1 millisecond', r.debounce_until) AS due
                         FROM ${t.runEvents} e WHERE e.run_id = r.id AND e.kind IN ('created', 'debounced')) x
     WHERE r.workflow_name = $1 AND r.started_at < x.due - interval '1 millisecond' ORDER BY r.id LIMIT 20`,
    [BOUNCE_WORKFLOW, s.debounceMs],
  );
  return {
    ratedStatuses: await statuses(RATED_WORKFLOW),
    ratedStarts,
    singleStatuses: await statuses(SINGLE_WORKFLOW),
    singleIntervals,
    bounceStatuses: await statuses(BOUNCE_WORKFLOW),
    bounceStarts,
    earlyBounces,
    duplicates,
  };
}

const text = (st: Record<string, number>) =>
  Object.entries(st)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ') || 'none';
const only = (st: Record<string, number>, status: string) => Object.keys(st).every((k) => k === status);

/**
 * Under the kills: no rate window holds more starts than the limit (by the recorded started_at, in
 * any window of the period), a dedupe key never has two active runs (snapshots; and no two accepted
 * executions of its runs overlap), debounced starts collapse (never two runs of a key waiting to
 * start, in any snapshot) and no debounced run starts before its time. Every run of them succeeds.
 */
export function judgeKeys(s: ChaosSettings, k: KeyFacts) {
  const lines: string[] = [];
  const violations: string[] = [];
  const { limit, periodMs } = s.rateLimit;
  const mostRated = mostInWindow(k.ratedStarts, periodMs);
  const singleOverlap = Math.max(0, ...[...byKey(k.singleIntervals).values()].map(maxOverlap));
  const dedupeDuplicates = k.duplicates.filter((d) => d.kind === 'dedupe');
  const debounceDuplicates = k.duplicates.filter((d) => d.kind === 'debounce');
  const bounceRuns = Object.values(k.bounceStatuses).reduce((a, b) => a + b, 0);

  lines.push(
    `rate limit (${limit} starts per ${periodMs} ms, ${s.ratedRuns} runs): ${text(k.ratedStatuses)}; most first starts in any ${periodMs}-ms window ${mostRated}`,
  );
  if ((k.ratedStatuses.SUCCEEDED ?? 0) !== s.ratedRuns || !only(k.ratedStatuses, 'SUCCEEDED'))
    violations.push(`rate-limited runs not all SUCCEEDED: ${text(k.ratedStatuses)}`);
  if (mostRated > limit) violations.push(`rate limit exceeded: ${mostRated} starts in one ${periodMs}-ms window (limit ${limit})`);

  lines.push(
    `singleton (${s.dedupeKeys} dedupe keys): runs ${text(k.singleStatuses)}; most executing at once per key ${singleOverlap}; ` +
      `snapshots with two active runs of a key: ${dedupeDuplicates.length}`,
  );
  if (!only(k.singleStatuses, 'SUCCEEDED')) violations.push(`singleton runs not all SUCCEEDED: ${text(k.singleStatuses)}`);
  if (singleOverlap > 1) violations.push(`singleton: ${singleOverlap} runs of one dedupe key executed at once`);
  for (const d of dedupeDuplicates.slice(0, 5))
    violations.push(`singleton: ${d.runs} active runs of dedupe key ${d.key} at ${new Date(d.at).toISOString()}`);

  lines.push(
    `debounce (${s.debounceKeys} keys, ${s.debounceMs} ms, at most ${s.debounceMaxMs} ms): ${k.bounceStarts} starts reached the database, ` +
      `collapsed into ${bounceRuns} runs (${text(k.bounceStatuses)}); snapshots with two runs of a key waiting to start: ${debounceDuplicates.length}; ` +
      `started before their time: ${k.earlyBounces.length}`,
  );
  if (!only(k.bounceStatuses, 'SUCCEEDED')) violations.push(`debounced runs not all SUCCEEDED: ${text(k.bounceStatuses)}`);
  for (const d of debounceDuplicates.slice(0, 5))
    violations.push(`debounce: ${d.runs} runs of debounce key ${d.key} waiting to start at ${new Date(d.at).toISOString()}`);
  for (const e of k.earlyBounces.slice(0, 5)) violations.push(`debounce: run ${e.id} started at ${e.startedAt}, before ${e.due}`);
  if (bounceRuns >= k.bounceStarts && k.bounceStarts > 0)
    violations.push(`debounce: ${k.bounceStarts} starts made ${bounceRuns} runs (none collapsed)`);

  return {
    lines,
    violations,
    figures: { mostRated, singleOverlap, keyDuplicates: k.duplicates.length, earlyBounces: k.earlyBounces.length, bounceRuns },
  };
}
