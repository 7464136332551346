/** Control of runs from outside: cancel (with its children), resume, fork from a step. */
import * as mysql from './mysql/control.js';
import { statement } from './statement.js';
import { actorDetail, groupEnds, history, signalRuns, WAKEUP_CHANNEL, CANCEL_CHANNEL, COMPENSATE_CHANNEL } from './sql-fragments.js';
import { END_WAITS } from './end-waits.js';
import { NOTHING_UNDONE_BEFORE } from './fork-plan.js';
import { forkInPartition } from './partitioned-fork.js';
import { dbNow } from './schedules.js';
import { runStore, sameAsParent, type Store } from './store.js';
import { listedTree, resumableTree, runTree } from './run-trees.js';
export type { CompensatingCancel } from './rows.js';
import type { CompensatingCancel } from './rows.js';

/**
 * Cancel an unfinished run and, when $3 (cascade) is true, its unfinished descendants (child runs,
 * through parent_id; index durable_runs_parent_idx). The executing workers (if any) are told
 * through CANCEL_CHANNEL and their fenced writes match nothing from now on. The parent of the run
 * (if it waits for it) is signalled. $1 run id, $2 history, $4 actor (who asked, or null: recorded in
 * the history). Returns every run it cancelled.
 */
const CANCEL_RUN = statement(
  'cancel_run',
  `
WITH RECURSIVE tree AS (
  SELECT id FROM durable_runs WHERE id = $1
  UNION
  SELECT c.id FROM durable_runs c JOIN tree t ON c.parent_id = t.id WHERE $3::boolean),
u AS (
  UPDATE durable_runs
  SET status = 'CANCELLED', finished_at = now(), updated_at = now(), lease_owner = NULL, lease_expires_at = NULL
  WHERE id IN (SELECT id FROM tree) AND status IN ('PENDING','RUNNING','WAITING')
  RETURNING id, parent_id, group_seq, group_index, status, error),
${END_WAITS('w', 'SELECT id FROM u')},
hist AS (${history(
    '$2',
    `SELECT id, 'cancelled', nullif(CASE WHEN id <> $1 THEN jsonb_build_object('by', 'ancestor', 'root', $1::text) ELSE '{}'::jsonb END
                                    || ${actorDetail('$4')}, '{}'::jsonb) FROM u WHERE true`,
  )}),
${groupEnds('ge', 'u')},
${signalRuns(
  'par',
  `SELECT parent_id FROM u WHERE id = $1 AND parent_id IS NOT NULL AND group_seq IS NULL
   UNION ALL SELECT run_id FROM ge WHERE crossed AND run_id NOT IN (SELECT id FROM u)`,
)}
SELECT id, pg_notify('${CANCEL_CHANNEL}', id) IS NULL AS notified, (SELECT n FROM par_n) AS signalled FROM u`,
);

/**
 * Cancel with compensation: run $1 and, when $3 (cascade) is true, its unfinished descendants. A
 * run that has nothing to undo (no step recorded a compensation) and that nobody executes is
 * CANCELLED at once, like CANCEL_RUN. Every other one gets cancel_requested_at: an executing worker
 * is told through COMPENSATE_CHANNEL (its heartbeat reports it too) and its available_at is bumped
 * (a suspension racing this statement then does not happen; see signalRuns); a PENDING or WAITING
 * run becomes due at once. Its next execution replays the workflow up to what it had done, runs the
 * compensations and ends it CANCELLED. $2 history, $4 actor. Rows are locked in id order. Returns each run
 * with its outcome: 'cancelled' (at once) or 'cancelling'.
 * A run past its pivot (a committed checkpoint of a `pivot: true` step: pivot_seq) is not compensated:
 * with $5 = 'refuse' nothing changes and each such run comes back 'refused' with its pivot; with
 * 'stop' it is CANCELLED at once, like CANCEL_RUN. The caller locks the tree first (LOCK_RUN_TREE) in
 * the same transaction, so this statement's snapshot, taken after the locks, sees every pivot that
 * committed before (a pivot's checkpoint holds the run row FOR SHARE; see store/pivot.ts).
 * `clock`: the time a request is stamped with (the transaction's now(); Citus wants no clock in a CASE
 * or coalesce of an UPDATE, so in distributed mode it is a parameter). `lock`: x locks what it reads,
 * for descendants that appeared after LOCK_RUN_TREE; in distributed mode the tree is a list read
 * before and locked by LOCK_RUN_TREE_LISTED, and Citus mis-executes that lock with the LATERAL join
 * ("missing data for column"), so it is left out there.
 */
const cancelCompensating = (clock: string, lock = '\n  ORDER BY r.id FOR NO KEY UPDATE OF r') => `
WITH RECURSIVE tree AS (
  SELECT id FROM durable_runs WHERE id = $1
  UNION
  SELECT c.id FROM durable_runs c JOIN tree t ON c.parent_id = t.id WHERE $3::boolean),
x AS (
  SELECT r.id, r.status, r.cancel_requested_at IS NOT NULL AS already,
         EXISTS (SELECT 1 FROM durable_steps s WHERE s.run_id = r.id AND (s.compensation -> 'by') IS NOT NULL) AS undo,
         p.seq AS pivot_seq, p.name AS pivot_name,
         -- a request's available_at (see signalRuns), computed here: Citus refuses clock arithmetic in an UPDATE
         CASE WHEN r.status = 'RUNNING' THEN greatest(${clock}, r.available_at + interval '1 millisecond')
              ELSE least(r.available_at, ${clock}) END AS requested_available_at
  FROM durable_runs r
  LEFT JOIN LATERAL (
    SELECT s.seq, s.name FROM durable_steps s
    WHERE s.run_id = r.id AND s.status = 'SUCCEEDED' AND (s.compensation -> 'pivot') IS NOT NULL ORDER BY s.seq LIMIT 1) p ON true
  WHERE r.id IN (SELECT id FROM tree) AND r.status IN ('PENDING','RUNNING','WAITING')${lock}),
refuse AS (SELECT id, pivot_seq, pivot_name FROM x WHERE pivot_seq IS NOT NULL AND $5 = 'refuse'),
ok AS (SELECT * FROM x WHERE NOT EXISTS (SELECT 1 FROM refuse)),
done AS (
  UPDATE durable_runs r
  SET status = 'CANCELLED', finished_at = now(), updated_at = now(), lease_owner = NULL, lease_expires_at = NULL
  FROM ok x WHERE r.id = x.id AND ((x.status <> 'RUNNING' AND NOT x.undo) OR x.pivot_seq IS NOT NULL)
  RETURNING r.id, r.parent_id, r.group_seq, r.group_index, r.status, r.error, x.pivot_seq, x.pivot_name),
${END_WAITS('w', 'SELECT id FROM done')},
req AS (
  UPDATE durable_runs r
  SET cancel_requested_at = coalesce(r.cancel_requested_at, ${clock}), updated_at = now(), available_at = x.requested_available_at
  FROM ok x WHERE r.id = x.id AND (x.status = 'RUNNING' OR x.undo) AND x.pivot_seq IS NULL
  RETURNING r.id, r.queue, r.status, x.already),
hist_done AS (${history(
  '$2',
  `SELECT id, 'cancelled', CASE WHEN pivot_seq IS NULL THEN jsonb_build_object('compensate', true, 'compensations', 0)
  ELSE jsonb_build_object('compensate', true, 'afterPivot', 'stop', 'pivot', jsonb_build_object('seq', pivot_seq, 'step', pivot_name)) END
  || CASE WHEN id <> $1 THEN jsonb_build_object('by', 'ancestor', 'root', $1::text) ELSE '{}'::jsonb END || ${actorDetail('$4')}
  FROM done WHERE true`,
)}),
hist_req AS (${history(
  '$2',
  `SELECT id, 'cancel_requested', jsonb_build_object('compensate', true)
  || CASE WHEN id <> $1 THEN jsonb_build_object('by', 'ancestor', 'root', $1::text) ELSE '{}'::jsonb END || ${actorDetail('$4')}
  FROM req WHERE NOT already`,
)}),
${groupEnds('ge', 'done')},
${signalRuns(
  'par',
  `SELECT parent_id FROM done WHERE id = $1 AND parent_id IS NOT NULL AND group_seq IS NULL
   UNION ALL SELECT run_id FROM ge WHERE crossed AND run_id NOT IN (SELECT id FROM done) AND run_id NOT IN (SELECT id FROM req)`,
)}
SELECT id, 'cancelled' AS outcome, pg_notify('${CANCEL_CHANNEL}', id) IS NULL AS notified, (SELECT n FROM par_n) AS signalled,
       pivot_seq, pivot_name FROM done
UNION ALL
SELECT id, 'cancelling', CASE WHEN status = 'RUNNING' THEN pg_notify('${COMPENSATE_CHANNEL}', id)
                              ELSE pg_notify('${WAKEUP_CHANNEL}', queue) END IS NULL, NULL, NULL, NULL FROM req
UNION ALL
SELECT id, 'refused', NULL, NULL, pivot_seq, pivot_name FROM refuse`;

const CANCEL_RUN_COMPENSATING = statement('cancel_run_compensating', cancelCompensating('now()'));

/** The same in distributed mode: its tree read beforehand ($6 the ids, see run-trees.ts), $7 the transaction's clock. */
const CANCEL_RUN_COMPENSATING_LISTED = listedTree(
  { name: 'durable_cancel_run_compensating', text: cancelCompensating('$7::timestamptz', '') },
  6,
);

/**
 * The unfinished runs of a cancel's tree ($1 and, when $2 is true, its descendants), locked in id
 * order: the first statement of a compensating cancel (see CANCEL_RUN_COMPENSATING).
 */
/** LOCK_RUN_TREE in distributed mode: the tree read beforehand ($1 the ids, see run-trees.ts). */
const LOCK_RUN_TREE_LISTED = statement(
  'lock_run_tree_listed',
  `SELECT r.id FROM durable_runs r WHERE r.id = ANY($1::text[]) AND r.status IN ('PENDING','RUNNING','WAITING') ORDER BY r.id FOR NO KEY UPDATE`,
);

const LOCK_RUN_TREE = statement(
  'lock_run_tree',
  `
WITH RECURSIVE tree AS (
  SELECT id FROM durable_runs WHERE id = $1
  UNION
  SELECT c.id FROM durable_runs c JOIN tree t ON c.parent_id = t.id WHERE $2::boolean)
SELECT r.id FROM durable_runs r WHERE r.id IN (SELECT id FROM tree) AND r.status IN ('PENDING','RUNNING','WAITING')
ORDER BY r.id FOR NO KEY UPDATE`,
);

/** RESUME_RUN after its tree of runs (`tree`): `clock`, the time a passed deadline is compared with (Citus wants no clock in a CASE of an UPDATE). */
const resumeTree = (clock: string) => `u AS (
  UPDATE durable_runs
  SET status = 'PENDING', available_at = now(), updated_at = now(), finished_at = NULL, error = NULL,
      deadline_at = CASE WHEN deadline_at < ${clock} THEN NULL ELSE deadline_at END
  WHERE id IN (SELECT id FROM tree) AND status IN ('CANCELLED','FAILED')
  RETURNING id, queue),
was AS (
  SELECT parent_id, group_seq, status FROM durable_runs
  WHERE id IN (SELECT id FROM u) AND group_seq IS NOT NULL),
ungroup AS (
  UPDATE durable_child_groups g
  SET ended = g.ended - x.n, failed = g.failed - x.f, cancelled = g.cancelled - x.c
  FROM (SELECT parent_id, group_seq, count(*) AS n, count(*) FILTER (WHERE status = 'FAILED') AS f,
               count(*) FILTER (WHERE status = 'CANCELLED') AS c
        FROM was GROUP BY parent_id, group_seq) x
  WHERE g.run_id = x.parent_id AND g.seq = x.group_seq),
w AS (UPDATE durable_steps SET status = 'WAITING' WHERE run_id IN (SELECT id FROM u) AND status = 'CANCELLED'),
f AS (
  DELETE FROM durable_steps s
  WHERE s.run_id IN (SELECT id FROM u) AND s.status = 'FAILED'
    AND s.seq = (SELECT max(seq) FROM durable_steps m WHERE m.run_id = s.run_id)),
hist AS (${history('$2', `SELECT id, 'resumed', nullif(${actorDetail('$4')}, '{}'::jsonb) FROM u WHERE true`)})
SELECT id, pg_notify('${WAKEUP_CHANNEL}', queue) IS NULL AS notified FROM u`;

/**
 * Resume a CANCELLED or FAILED run from its last checkpoint: the final failed step (if the run
 * failed in one, or in a compensation) is forgotten so that it runs again; an expired deadline is
 * lifted. A run cancelled with compensation keeps cancel_requested_at: resumed, it finishes its
 * compensations (if a plain cancel or a failed compensation interrupted them) and ends CANCELLED
 * again; it never runs its workflow forward. $1 run id,
 * $2 history, $4 actor. With $3 (cascade), the descendants cancelled with it (at the same time or after it:
 * a cascading cancel) are resumed too. A resumed child of a group no longer counts as ended on its
 * group's row (`was` reads the statuses before this statement's update: its snapshot).
 */
const RESUME_RUN = statement(
  'resume_run',
  `
WITH RECURSIVE root AS (
  SELECT id, finished_at FROM durable_runs WHERE id = $1 AND status IN ('CANCELLED','FAILED')),
tree AS (
  SELECT id FROM root
  UNION
  SELECT c.id FROM durable_runs c JOIN tree t ON c.parent_id = t.id
  WHERE $3::boolean AND c.status = 'CANCELLED' AND c.finished_at >= (SELECT finished_at FROM root)),
${resumeTree('now()')}`,
);

/** RESUME_RUN with its tree read beforehand (distributed mode, see run-trees.ts): $5 the ids, $6 the clock the tree was read at. */
const RESUME_RUN_LISTED = statement(
  'resume_run_listed',
  `
WITH tree AS (SELECT id FROM unnest($5::text[]) AS t(id) WHERE $1::text IS NOT NULL AND $3::boolean IS NOT NULL),
${resumeTree('$6::timestamptz')}`,
);

/**
 * What fork needs to know about its source: workflow and the next free step seq.
 * $1 run id. Indexes: durable_runs_pkey, durable_steps_pkey.
 */
const SELECT_FORK_SOURCE = statement(
  'select_fork_source',
  `
SELECT r.id, r.workflow_name, r.queue, (SELECT coalesce(max(s.seq) + 1, 0) FROM durable_steps s WHERE s.run_id = r.id)::int AS next_seq
FROM durable_runs r WHERE r.id = $1`,
);

/**
 * Fork: a new PENDING run ($2) of the same workflow, queue, priority, concurrency key and input as run $1, with
 * copies of its checkpoints whose seq < $3, so it replays those and executes from step $3 on.
 * The deadline keeps the source's timeout length, counted from now; $4 is this app's version.
 * Nothing is created when a step before $3 was undone (NOTHING_UNDONE_BEFORE: checked in the
 * statement, so a compensation recorded meanwhile is seen too).
 * The history of the new run records where it came from and $6, the actor (unless $5, history, is false); a
 * wake-up goes to its queue.
 * (The steps' foreign key is checked at the end of the statement, after the run row exists.)
 */
const FORK_RUN = statement(
  'fork_run',
  `
WITH src0 AS (SELECT * FROM durable_runs WHERE id = $1),
src AS (SELECT * FROM src0 WHERE ${NOTHING_UNDONE_BEFORE}),
ins AS (
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, deadline_at, app_version,
                            concurrency_key, context)
  SELECT $2, src.workflow_name, src.queue, 'PENDING', src.input, src.priority, now(),
         now() + (src.deadline_at - src.created_at), $4, src.concurrency_key, src.context
  FROM src
  RETURNING id, queue),
copied AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, error, attempts, started_at, finished_at, compensation, compensates)
  SELECT ins.id, s.seq, s.name, CASE s.status WHEN 'CANCELLED' THEN 'WAITING' ELSE s.status END, s.output, s.error, s.attempts, s.started_at, s.finished_at, s.compensation, s.compensates
  FROM ins JOIN durable_steps s ON s.run_id = $1 AND s.seq < $3::int
  RETURNING seq),
hist AS (
  INSERT INTO durable_run_events (run_id, kind, detail)
  SELECT ins.id, 'forked', jsonb_build_object('from', $1::text, 'fromStep', $3::int) || ${actorDetail('$6')} FROM ins WHERE $5::boolean)
SELECT ins.id, (SELECT count(*) FROM copied)::int AS copied, pg_notify('${WAKEUP_CHANNEL}', ins.queue) IS NULL AS notified
FROM ins`,
);

/** Distributed mode: CANCEL_RUN with the tree given as ids (store/run-trees.ts). */
const CANCEL_RUN_LISTED = listedTree(CANCEL_RUN, 5);

/** Cancels a run (and, with cascade, its unfinished descendants); returns every id it cancelled. */
export async function cancelTree(store: Store, id: string, cascade: boolean, actor: string | null): Promise<string[]> {
  if (store.sql.dialect === 'mysql') return mysql.cancelTree(store, id, cascade, actor);
  if (store.layout.partitions !== null) {
    const s = runStore(store, id);
    const tree = await runTree(s, id, cascade);
    return (await s.sql.query<{ id: string }>(CANCEL_RUN_LISTED, [id, s.history, cascade, actor, tree])).map((r) => r.id);
  }
  return (await store.sql.query<{ id: string }>(CANCEL_RUN, [id, store.history, cascade, actor])).map((r) => r.id);
}

/**
 * Cancels with compensation (see CANCEL_RUN_COMPENSATING), in one transaction that locks the runs
 * first; `afterPivot`: what to do with a run past its pivot. Returns each run affected and how.
 */
export async function cancelTreeCompensating(
  store: Store,
  id: string,
  cascade: boolean,
  actor: string | null,
  afterPivot: 'refuse' | 'stop' = 'refuse',
): Promise<CompensatingCancel[]> {
  if (store.sql.dialect === 'mysql') return mysql.cancelTreeCompensating(store, id, cascade, actor, afterPivot);
  type Row = { id: string; outcome: CompensatingCancel['outcome']; pivot_seq: number | null; pivot_name: string | null };
  const distributed = store.layout.partitions !== null;
  const s = runStore(store, id);
  const tree = distributed ? await runTree(s, id, cascade) : [];
  const rows = await s.sql.transaction(async (sql) => {
    if (!distributed) {
      await sql.query(LOCK_RUN_TREE, [id, cascade]);
      return sql.query<Row>(CANCEL_RUN_COMPENSATING, [id, store.history, cascade, actor, afterPivot]);
    }
    await sql.query(LOCK_RUN_TREE_LISTED, [tree]);
    const clock = new Date(await dbNow({ ...s, sql }));
    return sql.query<Row>(CANCEL_RUN_COMPENSATING_LISTED, [id, store.history, cascade, actor, afterPivot, tree, clock]);
  });
  return rows.map((r) => ({
    id: r.id,
    outcome: r.outcome,
    pivot: r.pivot_seq === null || r.pivot_seq === undefined ? null : { seq: Number(r.pivot_seq), step: String(r.pivot_name) },
  }));
}

/** true if the run was CANCELLED/FAILED and is now PENDING again (with the descendants cancelled with it, if cascade). */
export async function resumeRun(store: Store, id: string, cascade: boolean, actor: string | null): Promise<boolean> {
  if (store.sql.dialect === 'mysql') return mysql.resumeRun(store, id, cascade, actor);
  if (store.layout.partitions !== null) {
    const s = runStore(store, id);
    const read = await resumableTree(s, id, cascade);
    if (!read) return false;
    const rows = await s.sql.query<{ id: string }>(RESUME_RUN_LISTED, [id, s.history, cascade, actor, read.tree, read.clock]);
    return rows.some((r) => r.id === id);
  }
  return (await store.sql.query<{ id: string }>(RESUME_RUN, [id, store.history, cascade, actor])).some((r) => r.id === id);
}

/** What fork needs about its source run; null if there is none. */
export async function forkSource(store: Store, id: string): Promise<{ workflowName: string; queue: string; nextSeq: number } | null> {
  if (store.sql.dialect === 'mysql') return mysql.forkSource(store, id);
  const [r] = await runStore(store, id).sql.query<Record<string, unknown>>(SELECT_FORK_SOURCE, [id]);
  return r ? { workflowName: r.workflow_name as string, queue: r.queue as string, nextSeq: Number(r.next_seq) } : null;
}

/** Creates run `newId` from `sourceId` with its checkpoints before `fromStep`; null if the source vanished meanwhile. */
export async function forkRun(
  store: Store,
  sourceId: string,
  newId: string,
  fromStep: number,
  appVersion: string | null,
  actor: string | null,
): Promise<{ id: string; copiedSteps: number } | null> {
  if (store.sql.dialect === 'mysql') return mysql.forkRun(store, sourceId, newId, fromStep, appVersion, actor);
  if (store.layout.partitions !== null) {
    // Distributed mode: the copy is written beside its source (its id minted there: idBeside).
    sameAsParent(store, sourceId, [newId]);
    return forkInPartition(store, sourceId, newId, fromStep, appVersion, actor);
  }
  const [r] = await store.sql.query<{ id: string; copied: number }>(FORK_RUN, [
    sourceId,
    newId,
    fromStep,
    appVersion,
    store.history,
    actor,
  ]);
  return r ? { id: r.id, copiedSteps: Number(r.copied) } : null;
}
