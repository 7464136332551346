/** The parts of SWEEP_DEADLINES (maintenance.ts) that its distributed form (partitioned-maintenance.ts) runs as a statement of its own. */

/**
 * SWEEP_DEADLINES' CTEs `d`, `x` and `u` (maintenance.ts, which documents them): up to $1 runs past
 * their deadline, locked, and `u`, the runs ended FAILED or handed over to compensate (`undo`).
 * Shared by the single-server statement and SWEEP_DEADLINES_IN_PARTITION, so they agree.
 */
export const DEADLINE_RUNS = `d AS (
  SELECT r.id, r.deadline_at, r.available_at,
         EXISTS (SELECT 1 FROM durable_steps s WHERE s.run_id = r.id AND (s.compensation -> 'by') IS NOT NULL) AS undo
  FROM durable_runs r
  WHERE r.deadline_at IS NOT NULL AND r.status IN ('PENDING','RUNNING','WAITING') AND r.deadline_at < now()
  ORDER BY r.deadline_at LIMIT $1
  FOR UPDATE OF r SKIP LOCKED),
-- The new values are computed here, not in the UPDATE: Citus refuses clocks inside CASE, and
-- functions that are not immutable on columns, in an UPDATE.
x AS (
  SELECT d.*, CASE WHEN d.undo THEN NULL ELSE now() END AS finished, CASE WHEN d.undo THEN least(d.available_at, now()) ELSE d.available_at END AS due,
         jsonb_build_object('name', 'DeadlineExceededError', 'code', 'DEADLINE_EXCEEDED',
           'message', 'The run exceeded its deadline (' || to_char(d.deadline_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') ||
                      '); raise the workflow option timeoutMs or the start option timeoutMs.') AS failure
  FROM d),
u AS (
UPDATE durable_runs r
SET status = CASE WHEN x.undo THEN 'PENDING' ELSE 'FAILED' END,
    finished_at = x.finished,
    available_at = x.due,
    deadline_at = CASE WHEN x.undo THEN NULL ELSE r.deadline_at END,
    updated_at = now(), lease_owner = NULL, lease_expires_at = NULL,
    error = x.failure
FROM x WHERE r.id = x.id
RETURNING r.id, r.parent_id, r.group_seq, r.group_index, r.status, r.error, r.queue, x.undo, x.deadline_at)`;

/** SWEEP_DEADLINES' parents to signal: of the children ended outside a group, and of the groups whose wait the ends complete. */
export const DEADLINE_PARENTS = `SELECT parent_id FROM u WHERE parent_id IS NOT NULL AND group_seq IS NULL AND NOT undo
   UNION ALL SELECT run_id FROM ge WHERE crossed AND run_id NOT IN (SELECT id FROM u)`;
