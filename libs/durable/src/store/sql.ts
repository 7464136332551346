/**
 * Every SQL statement nestjs-durable sends, in one place. Each is a single statement (one
 * round trip, one commit in autocommit mode). Writes an executor makes carry the run's
 * lease epoch and match zero rows once the lease has moved on ("fencing").
 * Time always comes from the database clock (now()), never from the app's.
 */

/** Channel of wake-up hints; the payload is the queue name. Polling remains the truth. */
export const WAKEUP_CHANNEL = 'durable_wakeup';
/** Channel telling the executing worker that a run was cancelled; the payload is the run id. */
export const CANCEL_CHANNEL = 'durable_cancel';
/**
 * Channel telling the worker executing a RUNNING run that something it may wait for arrived
 * (a message, a child finished); the payload is the run id. A hint, like the wake-ups.
 */
export const SIGNAL_CHANNEL = 'durable_signal';

/**
 * CTEs `<name>` and `<name>_n` that signal the runs whose ids `ids` (a subquery) selects: a
 * WAITING run becomes due at once (available_at = now()) and its queue is woken; a RUNNING run
 * gets its available_at bumped (strictly increasing: the executor's token, see wait-sql.ts) and a
 * hint on SIGNAL_CHANNEL. Reference `(SELECT n FROM <name>_n)` in the final SELECT so the
 * notifications are sent. Used when a message is sent and when a child run ends.
 */
export const signalRuns = (name: string, ids: string) => `${name} AS (
  UPDATE durable_runs p
  SET available_at = CASE WHEN p.status = 'WAITING' THEN least(p.available_at, now())
                          ELSE greatest(now(), p.available_at + interval '1 millisecond') END
  WHERE p.id IN (${ids}) AND p.status IN ('RUNNING','WAITING')
  RETURNING p.id, p.queue, p.status),
${name}_n AS (
  SELECT count(CASE WHEN status = 'WAITING' THEN pg_notify('${WAKEUP_CHANNEL}', queue)
                    ELSE pg_notify('${SIGNAL_CHANNEL}', id) END) AS n
  FROM ${name})`;

/**
 * Run history (durable_run_events): statements that change a run's state write its history row
 * in the same statement (a CTE), when their last parameter (the engine option `history`) is true.
 */
const history = (param: string, select: string) => `
INSERT INTO durable_run_events (run_id, kind, detail)
${select} AND ${param}::boolean`;

/**
 * A run is due when available_at <= DUE_BY. Timestamps are stored with millisecond precision
 * and Postgres rounds to it, so a run made due "now" may be stored up to 0.5 ms in the future:
 * the extra millisecond keeps such a run claimable (and its wake-up sent) at once.
 */
export const DUE_BY = `now() + interval '1 millisecond'`;

const RUN_COLUMNS = `id, workflow_name, queue, status, input, output, error, priority, available_at, lease_owner,
  lease_expires_at, lease_epoch, attempt, parent_id, app_version, deadline_at, created_at, started_at, finished_at, updated_at`;

/** Recorded steps of a run, in seq order, as one json array (loaded once per execution). */
const STEPS_OF_R = `(SELECT coalesce(json_agg(json_build_object('seq', s.seq, 'name', s.name, 'status', s.status,
    'output', s.output, 'error', s.error) ORDER BY s.seq), '[]'::json) FROM durable_steps s WHERE s.run_id = r.id)`;

/** Checks that the tables and the claim index exist (startup). */
export const SCHEMA_CHECK = `
SELECT to_regclass('durable_runs') IS NOT NULL AS runs, to_regclass('durable_steps') IS NOT NULL AS steps,
       to_regclass('durable_messages') IS NOT NULL AS messages, to_regclass('durable_events') IS NOT NULL AS events,
       to_regclass('durable_run_events') IS NOT NULL AS run_events,
       to_regclass('durable_runs_claim_idx') IS NOT NULL AS claim_idx,
       to_regclass('durable_runs_wake_idx') IS NOT NULL AS wake_idx`;

/**
 * Enqueue one run (PENDING). $1 id, $2 workflow, $3 queue, $4 input jsonb, $5 priority,
 * $6 run-at (null = now), $7 delay ms (null = none), $8 timeout ms (deadline from now; null = none),
 * $9 parent id, $10 app version, $11 history. Existing id → no row (idempotent start).
 * The pg_notify is delivered when the enclosing transaction commits, never on rollback.
 */
export const INSERT_RUN = `
WITH ins AS (
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, deadline_at, parent_id, app_version)
  VALUES ($1, $2, $3, 'PENDING', $4::jsonb, $5,
          coalesce($6::timestamptz, now()) + coalesce($7::float8, 0) * interval '1 millisecond',
          now() + $8::float8 * interval '1 millisecond', $9, $10)
  ON CONFLICT (id) DO NOTHING
  RETURNING id, queue, available_at <= ${DUE_BY} AS due),
hist AS (${history('$11', `SELECT id, 'created', jsonb_build_object('workflow', $2::text, 'queue', queue) FROM ins WHERE true`)})
SELECT id, CASE WHEN due THEN pg_notify('${WAKEUP_CHANNEL}', queue) END IS NULL AS notified FROM ins`;

/**
 * Enqueue one run already claimed by this worker (it has a free slot; it executes the run
 * right after this statement returns, with no claim round trip and no wake-up).
 * Same parameters as INSERT_RUN but $6/$7 absent: $6 lease owner, $7 lease ms; $11 history.
 */
export const INSERT_RUN_CLAIMED = `
WITH ins AS (
INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, deadline_at, parent_id,
                          app_version, lease_owner, lease_epoch, lease_expires_at, attempt, started_at)
VALUES ($1, $2, $3, 'RUNNING', $4::jsonb, $5, now(), now() + $8::float8 * interval '1 millisecond', $9, $10,
        $6, 1, now() + $7::float8 * interval '1 millisecond', 1, now())
ON CONFLICT (id) DO NOTHING
RETURNING id, lease_epoch, attempt, deadline_at, available_at),
hist AS (${history('$11', `SELECT id, v.kind, v.detail FROM ins CROSS JOIN LATERAL (VALUES
  (1, 'created', jsonb_build_object('workflow', $2::text, 'queue', $3::text)),
  (2, 'claimed', jsonb_build_object('worker', $6::text, 'epoch', 1, 'attempt', 1))) AS v(o, kind, detail) WHERE true`)})
SELECT id, lease_epoch, attempt, deadline_at, available_at FROM ins`;

/**
 * Enqueue many runs in one statement (startMany). Arrays, one element per run: $1 ids, $2 workflows,
 * $3 queues, $4 inputs (json text), $5 priorities, $6 run-at (null = now), $7 timeout ms (null = none),
 * $8 parent ids, $9 app version (one value), $10 history. Returns the ids actually inserted; one wake-up per queue.
 */
export const INSERT_RUNS = `
WITH ins AS (
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, deadline_at, parent_id, app_version)
  SELECT t.id, t.wf, t.q, 'PENDING', t.inp::jsonb, t.pr, coalesce(t.ra, now()), now() + t.tmo * interval '1 millisecond', t.par, $9
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::timestamptz[], $7::float8[], $8::text[])
       AS t(id, wf, q, inp, pr, ra, tmo, par)
  ON CONFLICT (id) DO NOTHING
  RETURNING id, workflow_name, queue),
hist AS (${history('$10', `SELECT id, 'created', jsonb_build_object('workflow', workflow_name, 'queue', queue) FROM ins WHERE true`)}),
woken AS (SELECT count(pg_notify('${WAKEUP_CHANNEL}', q.queue)) AS n FROM (SELECT DISTINCT queue FROM ins) q)
SELECT ins.id FROM ins CROSS JOIN woken`;

/** Existing runs by id: workflow name and status (idempotent start resolves conflicts with it). */
export const SELECT_RUN_IDENTITY = `SELECT id, workflow_name, status FROM durable_runs WHERE id = ANY($1::text[])`;

/**
 * Claim up to $2 due runs of queue $1 for worker $3 with a lease of $4 ms, highest priority
 * (lowest number) and oldest first, among the workflows $5 this worker has code for (during a
 * rolling deploy an older instance leaves newer workflows to the instances that know them).
 * One statement: SKIP LOCKED lets every worker claim at once without waiting on each other.
 * Indexes: durable_runs_claim_idx (PENDING) and durable_runs_wake_idx (WAITING, by wake-up time),
 * both partial, so neither finished nor sleeping runs slow the claim down. Rows locked by one
 * CTE but left out of the final LIMIT are released at commit.
 * Returns the recorded steps too, so an execution needs no other read, and available_at (the
 * token of durable waits, see wait-sql.ts). $6 history: a 'claimed' row, or 'woken' for a WAITING run.
 */
export const CLAIM = `
WITH p AS (
  SELECT id, status AS prev, priority, available_at FROM durable_runs
  WHERE queue = $1 AND status = 'PENDING' AND available_at <= ${DUE_BY} AND workflow_name = ANY($5::text[])
  ORDER BY priority, available_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
w AS (
  SELECT id, status AS prev, priority, available_at FROM durable_runs
  WHERE queue = $1 AND status = 'WAITING' AND available_at <= ${DUE_BY} AND workflow_name = ANY($5::text[])
  ORDER BY available_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED),
c AS (SELECT id, prev FROM (SELECT * FROM p UNION ALL SELECT * FROM w) due ORDER BY priority, available_at LIMIT $2),
u AS (
  UPDATE durable_runs r
  SET status = 'RUNNING', lease_owner = $3, lease_epoch = r.lease_epoch + 1, attempt = r.attempt + 1,
      lease_expires_at = now() + $4::float8 * interval '1 millisecond',
      started_at = coalesce(r.started_at, now()), updated_at = now()
  FROM c WHERE r.id = c.id
  RETURNING r.id, r.workflow_name, r.input, r.lease_epoch, r.attempt, r.parent_id, r.deadline_at, r.available_at, c.prev,
            ${STEPS_OF_R} AS steps),
hist AS (${history('$6', `SELECT id, CASE WHEN prev = 'WAITING' THEN 'woken' ELSE 'claimed' END,
  jsonb_build_object('worker', $3::text, 'epoch', lease_epoch, 'attempt', attempt) FROM u WHERE true`)})
SELECT id, workflow_name, input, lease_epoch, attempt, parent_id, deadline_at, available_at, steps FROM u`;

/**
 * Heartbeat: extend, in one statement, the leases this worker still holds. Rows are locked in id
 * order, like the batched checkpoints and run ends (INSERT_STEPS, FINISH_RUNS): no deadlock. $1 ids, $2 epochs,
 * $3 lease ms. Returns the ids still held; a run missing from the answer was lost (swept,
 * cancelled, or claimed by another worker) and its execution must stop.
 */
export const HEARTBEAT = `
WITH l AS (
  SELECT r.id FROM durable_runs r JOIN unnest($1::text[], $2::int[]) AS h(id, epoch) ON r.id = h.id AND r.lease_epoch = h.epoch
  -- An expired lease is not renewed: the worker counts it lost already (it stopped the run), and
  -- renewing it would hold a run nobody executes until the new lease expires too.
  WHERE r.status = 'RUNNING' AND r.lease_expires_at > now()
  ORDER BY r.id FOR NO KEY UPDATE OF r)
UPDATE durable_runs r SET lease_expires_at = now() + $3::float8 * interval '1 millisecond'
FROM l WHERE r.id = l.id
RETURNING r.id`;

/**
 * Checkpoint finished steps, fenced: a step is inserted only while its run is RUNNING under its
 * epoch, and FOR SHARE holds the run rows until this statement commits, so a concurrent sweep or
 * claim either sees the step or makes the insert match nothing — never a lost or duplicate step.
 * Many steps of this worker's runs go in one statement (group commit; see WriteBatcher); a
 * transactional step sends its one checkpoint through its own transaction.
 * Run rows are locked in id order (as HEARTBEAT and FINISH_RUNS do): concurrent batches never
 * deadlock. Arrays, one element per step: $1 run ids, $2 epochs, $3 seqs, $4 names, $5 statuses,
 * $6 outputs, $7 errors (json text), $8 attempts, $9 durations ms; $10 history.
 * Returns the (run_id, seq) pairs written.
 */
export const INSERT_STEPS = `
WITH t AS (
  SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::float8[])
    AS t(run_id, epoch, seq, name, status, output, error, attempts, dur)),
l AS (
  SELECT r.id, r.lease_epoch FROM durable_runs r
  WHERE r.id IN (SELECT run_id FROM t) AND r.status = 'RUNNING'
  ORDER BY r.id FOR SHARE),
s AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, error, attempts, started_at, finished_at)
  SELECT t.run_id, t.seq, t.name, t.status, t.output::jsonb, t.error::jsonb, t.attempts, now() - t.dur * interval '1 millisecond', now()
  FROM t JOIN l ON l.id = t.run_id AND l.lease_epoch = t.epoch
  ON CONFLICT (run_id, seq) DO NOTHING
  RETURNING run_id, seq, name, status, attempts, error),
hist AS (${history('$10', `SELECT run_id, 'step_failed', jsonb_build_object('seq', seq, 'step', name, 'attempts', attempts,
  'error', error -> 'message') FROM s WHERE status = 'FAILED'`)})
SELECT run_id, seq FROM s`;

/**
 * End many runs of this worker in one statement (group commit): fenced by (id, epoch), rows locked in id
 * order. Arrays: $1 ids, $2 epochs, $3 statuses, $4 outputs, $5 errors
 * (json text); $6 history. A finished child signals its parent (unless the parent ends in this
 * same statement). Returns the ids ended.
 */
export const FINISH_RUNS = `
WITH t AS (
  SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[]) AS t(id, epoch, status, output, error)),
l AS (
  SELECT r.id FROM durable_runs r JOIN t ON t.id = r.id AND r.lease_epoch = t.epoch
  WHERE r.status = 'RUNNING'
  ORDER BY r.id FOR NO KEY UPDATE OF r),
u AS (
  UPDATE durable_runs r
  SET status = t.status, output = t.output::jsonb, error = t.error::jsonb, finished_at = now(), updated_at = now(),
      lease_owner = NULL, lease_expires_at = NULL
  FROM t JOIN l ON l.id = t.id WHERE r.id = t.id
  RETURNING r.id, r.parent_id, r.status, r.error),
hist AS (${history('$6', `SELECT id, CASE WHEN status = 'SUCCEEDED' THEN 'completed' ELSE 'failed' END,
  CASE WHEN status = 'FAILED' THEN jsonb_build_object('error', error -> 'message') END FROM u WHERE true`)}),
${signalRuns('par', 'SELECT parent_id FROM u WHERE parent_id IS NOT NULL AND parent_id NOT IN (SELECT id FROM t)')}
SELECT id, (SELECT n FROM par_n) AS signalled FROM u`;

/**
 * Hand runs back (graceful shutdown, or a worker that stops them): claimable again at once,
 * and a wake-up per queue so another instance takes them without waiting for a poll.
 * $1 ids, $2 epochs, $3 history.
 */
export const RELEASE_RUNS = `
WITH u AS (
  UPDATE durable_runs r
  -- Claimable at once, in its old place in the queue (as SWEEP_EXPIRED_LEASES does).
  SET status = 'PENDING', lease_owner = NULL, lease_expires_at = NULL, available_at = least(r.available_at, now()), updated_at = now()
  FROM unnest($1::text[], $2::int[]) AS h(id, epoch)
  WHERE r.id = h.id AND r.lease_epoch = h.epoch AND r.status = 'RUNNING'
  RETURNING r.id, r.queue),
hist AS (${history('$3', `SELECT id, 'released', NULL::jsonb FROM u WHERE true`)})
SELECT q.queue, q.n, pg_notify('${WAKEUP_CHANNEL}', q.queue) IS NULL AS notified
FROM (SELECT queue, count(*)::int AS n FROM u GROUP BY queue) q`;

/**
 * Sweeper: runs whose lease expired (their worker died or froze) become claimable again (keeping
 * their place in the queue: available_at is not moved later),
 * at most $1 per statement; a wake-up per queue. Index: durable_runs_lease_idx.
 * SKIP LOCKED makes it safe on every instance at once. $2 history ('lease_expired').
 */
export const SWEEP_EXPIRED_LEASES = `
WITH x AS (
  SELECT id, lease_owner, lease_epoch FROM durable_runs
  WHERE status = 'RUNNING' AND lease_expires_at < now()
  ORDER BY lease_expires_at LIMIT $1
  FOR UPDATE SKIP LOCKED),
u AS (
  UPDATE durable_runs r
  -- Claimable at once, in its old place in the queue: a recovered run is not sent behind the backlog.
  SET status = 'PENDING', lease_owner = NULL, lease_expires_at = NULL, available_at = least(r.available_at, now()), updated_at = now()
  FROM x WHERE r.id = x.id
  RETURNING r.id, r.queue, x.lease_owner, x.lease_epoch),
hist AS (${history('$2', `SELECT id, 'lease_expired', jsonb_build_object('worker', lease_owner, 'epoch', lease_epoch) FROM u WHERE true`)})
SELECT q.queue, q.n, pg_notify('${WAKEUP_CHANNEL}', q.queue) IS NULL AS notified
FROM (SELECT queue, count(*)::int AS n FROM u GROUP BY queue) q`;

/**
 * Sweeper: unfinished runs past their deadline end FAILED with a timeout error, at most $1 per
 * statement, even when no process is executing them (a WAITING run too: a sleep or a wait does
 * not extend a deadline). Index: durable_runs_deadline_idx. A child signals its parent.
 * $2 history ('failed' with reason 'deadline').
 */
export const SWEEP_DEADLINES = `
WITH x AS (
  SELECT id FROM durable_runs
  WHERE deadline_at IS NOT NULL AND status IN ('PENDING','RUNNING','WAITING') AND deadline_at < now()
  ORDER BY deadline_at LIMIT $1
  FOR UPDATE SKIP LOCKED),
u AS (
UPDATE durable_runs r
SET status = 'FAILED', finished_at = now(), updated_at = now(), lease_owner = NULL, lease_expires_at = NULL,
    error = jsonb_build_object('name', 'DeadlineExceededError', 'code', 'DEADLINE_EXCEEDED',
      'message', 'The run exceeded its deadline (' || to_char(r.deadline_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') ||
                 '); raise the workflow option timeoutMs or the start option timeoutMs.')
FROM x WHERE r.id = x.id
RETURNING r.id, r.parent_id, r.deadline_at),
hist AS (${history('$2', `SELECT id, 'failed', jsonb_build_object('reason', 'deadline', 'deadline', deadline_at) FROM u WHERE true`)}),
${signalRuns('par', 'SELECT parent_id FROM u WHERE parent_id IS NOT NULL')}
SELECT id, (SELECT n FROM par_n) AS signalled FROM u`;

/**
 * Sweeper: delete finished runs older than $1 ms, at most $2 per statement, with everything
 * that belongs to them (steps by cascade). Index: durable_runs_finished_idx.
 */
export const SWEEP_RETENTION = `
WITH d AS (
  DELETE FROM durable_runs WHERE id IN (
    SELECT id FROM durable_runs
    WHERE finished_at IS NOT NULL AND finished_at < now() - $1::float8 * interval '1 millisecond'
    ORDER BY finished_at LIMIT $2
    FOR UPDATE SKIP LOCKED)
  RETURNING id),
m AS (DELETE FROM durable_messages WHERE run_id IN (SELECT id FROM d)),
e AS (DELETE FROM durable_events WHERE run_id IN (SELECT id FROM d)),
h AS (DELETE FROM durable_run_events WHERE run_id IN (SELECT id FROM d))
SELECT count(*)::int AS n FROM d`;

/** One run with its steps (WorkflowClient.getRun). */
export const SELECT_RUN = `
SELECT ${RUN_COLUMNS},
  (SELECT coalesce(json_agg(json_build_object('seq', s.seq, 'name', s.name, 'status', s.status, 'output', s.output,
     'error', s.error, 'attempts', s.attempts, 'startedAt', s.started_at, 'finishedAt', s.finished_at) ORDER BY s.seq), '[]'::json)
   FROM durable_steps s WHERE s.run_id = r.id) AS steps
FROM durable_runs r WHERE r.id = $1`;

/** Status and result of one run (WorkflowHandle.result polls it). */
export const SELECT_RUN_RESULT = `SELECT status, output, error FROM durable_runs WHERE id = $1`;

/**
 * Cancel an unfinished run and, when $3 (cascade) is true, its unfinished descendants (child runs,
 * through parent_id; index durable_runs_parent_idx). The executing workers (if any) are told
 * through CANCEL_CHANNEL and their fenced writes match nothing from now on. The parent of the run
 * (if it waits for it) is signalled. $1 run id, $2 history. Returns every run it cancelled.
 */
export const CANCEL_RUN = `
WITH RECURSIVE tree AS (
  SELECT id FROM durable_runs WHERE id = $1
  UNION
  SELECT c.id FROM durable_runs c JOIN tree t ON c.parent_id = t.id WHERE $3::boolean),
u AS (
  UPDATE durable_runs
  SET status = 'CANCELLED', finished_at = now(), updated_at = now(), lease_owner = NULL, lease_expires_at = NULL
  WHERE id IN (SELECT id FROM tree) AND status IN ('PENDING','RUNNING','WAITING')
  RETURNING id, parent_id),
hist AS (${history('$2', `SELECT id, 'cancelled', CASE WHEN id <> $1 THEN jsonb_build_object('by', 'ancestor', 'root', $1::text) END FROM u WHERE true`)}),
${signalRuns('par', 'SELECT parent_id FROM u WHERE id = $1 AND parent_id IS NOT NULL')}
SELECT id, pg_notify('${CANCEL_CHANNEL}', id) IS NULL AS notified, (SELECT n FROM par_n) AS signalled FROM u`;

/**
 * Resume a CANCELLED or FAILED run from its last checkpoint: the final failed step (if the run
 * failed in one) is forgotten so that it runs again; an expired deadline is lifted. $1 run id,
 * $2 history. With $3 (cascade), the descendants cancelled with it (at the same time or after it:
 * a cascading cancel) are resumed too.
 */
export const RESUME_RUN = `
WITH RECURSIVE root AS (
  SELECT id, finished_at FROM durable_runs WHERE id = $1 AND status IN ('CANCELLED','FAILED')),
tree AS (
  SELECT id FROM root
  UNION
  SELECT c.id FROM durable_runs c JOIN tree t ON c.parent_id = t.id
  WHERE $3::boolean AND c.status = 'CANCELLED' AND c.finished_at >= (SELECT finished_at FROM root)),
u AS (
  UPDATE durable_runs
  SET status = 'PENDING', available_at = now(), updated_at = now(), finished_at = NULL, error = NULL,
      deadline_at = CASE WHEN deadline_at < now() THEN NULL ELSE deadline_at END
  WHERE id IN (SELECT id FROM tree) AND status IN ('CANCELLED','FAILED')
  RETURNING id, queue),
f AS (
  DELETE FROM durable_steps s
  WHERE s.run_id IN (SELECT id FROM u) AND s.status = 'FAILED'
    AND s.seq = (SELECT max(seq) FROM durable_steps m WHERE m.run_id = s.run_id)),
hist AS (${history('$2', `SELECT id, 'resumed', NULL::jsonb FROM u WHERE true`)})
SELECT id, pg_notify('${WAKEUP_CHANNEL}', queue) IS NULL AS notified FROM u`;

/** Status of one run (to explain why cancel/resume changed nothing). */
export const SELECT_RUN_STATUS = `SELECT status FROM durable_runs WHERE id = $1`;
