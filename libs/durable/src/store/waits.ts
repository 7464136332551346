/**
 * Durable waits (sleep, recv, a child's result): resolving them and suspending the run, in one statement.
 *
 * How a waiting run is woken without losing a wake-up: a signal (a message sent to the run, a
 * child of it finishing) always touches the run row — a WAITING run becomes due
 * (available_at ≤ now()), a RUNNING run gets its available_at bumped (see signalRuns in
 * sql-fragments.ts). The executor remembers the available_at it last saw (its "token");
 * RESOLVE_WAITS locks the run row and suspends only if the token is unchanged. A signal that
 * committed after the statement's snapshot therefore either changed the token (the executor
 * looks again) or finds the run WAITING (and makes it due).
 */
import * as mysql from './mysql/waits.js';
import { statement } from './statement.js';
import { HELD_RUN } from './sql-fragments.js';
import { runStore, parsed, toDate, type Store } from './store.js';
import * as partitioned from './partitioned-waits.js';
import { nextWake, waitResults } from './wait-sql.js';
export type { WaitSpec } from './rows.js';
import type { WaitSpec } from './rows.js';
export type { ResolveResult } from './rows.js';
import type { ResolveResult } from './rows.js';

/**
 * Resolve the pending waits of one execution and, when nothing can progress, suspend the run —
 * one statement. Waits are passed as parallel arrays (one element per wait):
 *   $7 seq, $8 kind ('sleep' | 'recv' | 'child' | 'group'), $9 step name, $10 key (recv: topic, child: child run id,
 *   group: the seq of the step that started it),
 *   $11 ms (a timer not recorded yet: sleep length / recv timeout), $12 due (a recorded wake time / recv deadline).
 * What it does, fenced by $1 run / $2 epoch:
 *   - recv: the k-th pending recv of a topic (in seq order) consumes the k-th oldest unconsumed message of
 *     that topic; its step is recorded SUCCEEDED with the payload and the message marked consumed
 *     (consumed_seq) in the same statement — exactly once. Without a message: a recv whose deadline
 *     passed is recorded SUCCEEDED with null (timeout); a new timeout is recorded as a WAITING step
 *     holding its deadline, so a replay keeps the original deadline.
 *   - child: a child run that ended (or no longer exists) is recorded as {status, output, error}.
 *   - group ($13 count, $14 the run that started it: a fork waits on its source's): the group's wake_at is
 *     set to the smallest count waited for, under its row's lock (see groupEnds in sql-fragments.ts); a
 *     wait whose count `ended` reached is recorded as the group's counters; a group that no longer
 *     exists (its run was deleted) as {missing: true}.
 *   - sleep: a new sleep is recorded SUCCEEDED with its wake time (output: a Date), once.
 *   - suspend (only if $4 allows it, nothing was resolved, and the run's available_at still equals
 *     the token $3): status WAITING, available_at = the earliest timer (or now() + $5 ms, a safety
 *     re-check for waits without a timer), lease released, attempt reset (a suspension is not a crash).
 * $6: write the history row ('suspended'). Returns held (0 = lease lost), the current token, the steps
 * written, and the suspension (until, queue) if any. Index: durable_messages_pending_idx.
 * The CTEs w … res and nxt are in wait-sql.ts (waitResults, nextWake): distributed mode
 * runs them in a statement of its own, and writes what `res` holds after it.
 */
const RESOLVE_WAITS = statement(
  'resolve_waits',
  `
WITH ${HELD_RUN},
${waitResults(7)},
ins AS (
  INSERT INTO durable_steps AS s (run_id, seq, name, status, output, attempts, started_at, finished_at)
  SELECT $1, seq, name, status, output, 1, now(), now() FROM res
  ON CONFLICT (run_id, seq) DO UPDATE SET status = excluded.status, output = excluded.output, finished_at = excluded.finished_at
  WHERE s.status = 'WAITING'
  RETURNING s.seq, s.status, s.output),
used AS (
  UPDATE durable_messages m SET consumed_seq = got.seq, consumed_at = now()
  FROM got WHERE m.id = got.msg_id AND got.seq IN (SELECT seq FROM ins)
  RETURNING m.id),
progress AS (SELECT count(*) AS n FROM ins JOIN res USING (seq) WHERE res.resolves),
${nextWake('$5')},
sus AS (
  UPDATE durable_runs r
  SET status = 'WAITING', available_at = (SELECT at FROM nxt), lease_owner = NULL, lease_expires_at = NULL,
      attempt = 0, updated_at = now()
  FROM run
  WHERE r.id = run.id AND $4::boolean AND run.available_at = $3::timestamptz AND (SELECT n FROM progress) = 0
  RETURNING r.id, r.queue, r.available_at),
hist AS (
  INSERT INTO durable_run_events (run_id, kind, detail)
  SELECT id, 'suspended', jsonb_build_object('until', available_at,
           'waits', (SELECT jsonb_agg(jsonb_build_object('seq', seq, 'kind', kind, 'key', key) ORDER BY seq) FROM w))
  FROM sus WHERE $6::boolean)
SELECT (SELECT count(*) FROM run)::int AS held,
       (SELECT available_at FROM run) AS token,
       (SELECT available_at FROM sus) AS suspended_until,
       (SELECT queue FROM sus) AS queue,
       (SELECT coalesce(json_agg(json_build_object('seq', seq, 'status', status, 'output', output,
                 'message', got.seq IS NOT NULL, 'traceparent', got.traceparent)), '[]'::json)
        FROM ins LEFT JOIN got USING (seq)) AS steps`,
);

export async function resolveWaits(
  store: Store,
  a: { runId: string; epoch: number; token: Date | null; maySuspend: boolean; recheckMs: number; waits: WaitSpec[] },
): Promise<ResolveResult> {
  if (store.sql.dialect === 'mysql') return mysql.resolveWaits(store, a);
  store = runStore(store, a.runId);
  const w = a.waits;
  const waits = [
    w.map((x) => x.seq),
    w.map((x) => x.kind),
    w.map((x) => x.name),
    w.map((x) => x.key),
    w.map((x) => x.ms),
    w.map((x) => (x.due ? x.due.toISOString() : null)),
    w.map((x) => x.count ?? null),
    w.map((x) => x.owner ?? null),
  ];
  if (store.partition !== undefined) return partitioned.resolveWaitsInPartition(store, a, waits);
  const [row] = await store.sql.query<Record<string, unknown>>(RESOLVE_WAITS, [
    a.runId,
    a.epoch,
    a.token,
    a.maySuspend && a.token !== null,
    a.recheckMs,
    store.history,
    ...waits,
  ]);
  const until = toDate(row.suspended_until);
  return {
    held: Number(row.held) === 1,
    token: toDate(row.token),
    suspended: until ? { until, queue: String(row.queue) } : null,
    steps: parsed<ResolveResult['steps']>(row.steps),
  };
}
