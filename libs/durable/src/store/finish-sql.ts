/** The parts of FINISH_RUNS (checkpoints.ts) that its distributed form (partitioned-checkpoints.ts) shares. */
import { deleteRunParts } from './sql-fragments.js';
import { END_WAITS } from './end-waits.js';

/**
 * FINISH_RUNS' CTEs t … l (checkpoints.ts, which documents them): the ends of $1..$5 (ids, epochs,
 * statuses, outputs, errors) and `del` (not kept), the runs and parents `locked` locked in id order,
 * and `l`, the ends of the runs held under their epoch (refused: asked to cancel with compensation;
 * gone: not kept and succeeded).
 */
export const HELD_ENDS = (del: string, locked: string) => `t AS (
  SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], ${del}::bool[]) AS t(id, epoch, status, output, error, del)),
lk AS (
  SELECT r.id, r.lease_epoch, r.status, r.cancel_requested_at FROM durable_runs r
  WHERE r.id = ANY(${locked}::text[])
  ORDER BY r.id FOR NO KEY UPDATE OF r),
lr AS (
  SELECT lk.id, lk.lease_epoch, t.status, t.output, t.error, t.del, (t.status = 'SUCCEEDED' AND lk.cancel_requested_at IS NOT NULL) AS refused
  FROM lk JOIN t ON t.id = lk.id AND lk.lease_epoch = t.epoch
  WHERE lk.status = 'RUNNING' AND (SELECT count(*) FROM lk) >= 0),
l AS (SELECT lr.*, (lr.del AND lr.status = 'SUCCEEDED' AND NOT lr.refused) AS gone FROM lr)`;

/** ENDED_RUNS' CTE u: the held runs ended (neither refused nor deleted), with what their parents and groups need. */
export const ENDED_UPDATE = `u AS (
  UPDATE durable_runs r
  SET status = l.status, output = l.output::jsonb, error = l.error::jsonb, finished_at = now(), updated_at = now(),
      lease_owner = NULL, lease_expires_at = NULL
  FROM l WHERE r.id = l.id AND NOT l.refused AND NOT l.gone
  RETURNING r.id, r.parent_id, r.status, r.error, r.group_seq, r.group_index)`;

/**
 * FINISH_RUNS' CTEs u, d, p0… and w (checkpoints.ts, which documents them), after HELD_ENDS: the held
 * runs ended (u, with what their parents and groups need), those not kept deleted with their parts (d,
 * p0…), and the waits of the cancelled ones ended with them (w).
 */
export const ENDED_RUNS = `${ENDED_UPDATE},
d AS (DELETE FROM durable_runs WHERE id = ANY(ARRAY(SELECT id FROM l WHERE gone)) RETURNING id),
${deleteRunParts('= ANY(ARRAY(SELECT id FROM l WHERE gone))')},
${END_WAITS('w', "SELECT id FROM u WHERE status = 'CANCELLED'")}`;

/** The parents FINISH_RUNS signals: of the children ended outside a group (u), and of the groups whose wait the ends complete (ge). */
export const ENDED_PARENTS = `SELECT parent_id FROM u WHERE parent_id IS NOT NULL AND group_seq IS NULL AND parent_id <> ALL($1::text[])
   UNION ALL SELECT run_id FROM ge WHERE crossed AND run_id <> ALL($1::text[])`;
