/**
 * SQL pieces shared by the store's statements. Rules every statement follows: one statement per
 * round trip (one commit in autocommit mode); every write an executor makes carries the run's
 * lease epoch and matches zero rows once the lease has moved on ("fencing"); time always comes
 * from the database clock (now()), never from the app's.
 */

/** Recorded steps of run `r`, in seq order, as one json array (loaded once per execution; index: durable_steps' primary key). */
export const STEPS_OF_R = `(SELECT coalesce(json_agg(json_build_object('seq', s.seq, 'name', s.name, 'status', s.status,
    'output', s.output, 'error', s.error, 'compensation', s.compensation, 'compensates', s.compensates) ORDER BY s.seq), '[]'::json)
  FROM durable_steps s WHERE s.run_id = r.id)`;

/** Channel of wake-up hints; the payload is the queue name. Polling remains the truth. */
export const WAKEUP_CHANNEL = 'durable_wakeup';
/** Channel telling the executing worker that a run was cancelled; the payload is the run id. */
export const CANCEL_CHANNEL = 'durable_cancel';
/**
 * Channel telling the executing worker that a run was asked to cancel with compensation (payload:
 * the run id). A hint: the heartbeat reports the request too (cancel_requested_at).
 */
export const COMPENSATE_CHANNEL = 'durable_compensate';
/** Channel telling every instance that a queue's cluster-wide limits changed; the payload is the queue. */
export const FLOW_LIMITS_CHANNEL = 'durable_flow_limits';
/**
 * Channel telling the worker executing a RUNNING run that something it may wait for arrived
 * (a message, a child finished); the payload is the run id. A hint, like the wake-ups.
 */
export const SIGNAL_CHANNEL = 'durable_signal';

/** The tables that hold a run's parts by run_id without a foreign key: deleting a run deletes its rows there too (its steps go by cascade). */
export const RUN_PART_TABLES = [
  'durable_messages',
  'durable_events',
  'durable_run_events',
  'durable_stream_chunks',
  'durable_child_groups',
  'durable_group_ends',
] as const;

/**
 * CTEs (p0, p1, …) that delete the parts of the runs `ids` names, in every RUN_PART_TABLES table:
 * `ids` completes `WHERE run_id …`, e.g. `IN (SELECT id FROM d)` or `= ANY($1::text[])`.
 */
export const deleteRunParts = (ids: string) => RUN_PART_TABLES.map((t, i) => `p${i} AS (DELETE FROM ${t} WHERE run_id ${ids})`).join(',\n');

/** Channel telling readers of a run's streams that a chunk was written; the payload is the run id. A hint: readers poll too. */
export const STREAM_CHANNEL = 'durable_stream';

/**
 * CTEs `<name>` and `<name>_n` that signal the runs whose ids `ids` (a subquery) selects: a
 * WAITING run becomes due at once (available_at = now()) and its queue is woken; a RUNNING run
 * gets its available_at bumped (strictly increasing: the executor's token, see waits.ts) and a
 * hint on SIGNAL_CHANNEL. Reference `(SELECT n FROM <name>_n)` in the final SELECT so the
 * notifications are sent. Used when a message is sent and when a child run ends.
 * The ids are gathered into an array first (an InitPlan, run once), so the runs are found by their
 * primary key: as `p.id IN (ids)` the planner semi-joined the CTE against every RUNNING and WAITING
 * run, rescanning it per run (in FINISH_RUNS, much of the statement's time for a batch of runs
 * ending with no parent). The new available_at is computed by the locking read, not in the UPDATE:
 * Citus refuses a clock inside CASE, and clock arithmetic on a column, in an UPDATE.
 */
export const signalRuns = (name: string, ids: string) => `${signalledRuns(name, ids)},
${name}_n AS (
  ${notifySignalled(name)})`;

/** signalRuns without its notifications (CTEs `<name>_at` and `<name>`): Citus routes no CTE that calls pg_notify. */
export const signalledRuns = (name: string, ids: string) => `${name}_at AS (
  SELECT p.id, CASE WHEN p.status = 'WAITING' THEN least(p.available_at, now())
                    ELSE greatest(now(), p.available_at + interval '1 millisecond') END AS at
  FROM durable_runs p
  WHERE p.id = ANY(ARRAY(${ids})) AND p.status IN ('RUNNING','WAITING')
  FOR NO KEY UPDATE OF p),
${name} AS (
  -- by primary key from the array as well: joined to the CTE alone, a plan may hash the whole table (see claimUpdate)
  UPDATE durable_runs p SET available_at = a.at FROM ${name}_at a WHERE p.id = a.id AND p.id = ANY(ARRAY(SELECT id FROM ${name}_at))
  RETURNING p.id, p.queue, p.status)`;

/** A SELECT sending the notifications of the runs CTE `name` (signalledRuns) signalled: one row, n = how many. */
export const notifySignalled = (name: string) => `SELECT count(CASE WHEN status = 'WAITING' THEN pg_notify('${WAKEUP_CHANNEL}', queue)
                    ELSE pg_notify('${SIGNAL_CHANNEL}', id) END) AS n
  FROM ${name}`;

/**
 * CTEs `<name>_c`, `<name>` and `<name>_o` that count the ends of children started by
 * Durable.startChildren: `ended` (a FROM item with parent_id, group_seq, group_index, status and
 * error: the runs this statement ended) moves each group's counters once per group, under the group row's lock.
 * `<name>` returns the parents whose wait the ends complete (`crossed`: ended reached the parent's
 * wake_at with these ends) — only those are signalled, not one wake-up per child. A parent suspending
 * on a group writes its wake_at under the same lock (RESOLVE_WAITS), so of the two the later one sees
 * the other. `<name>_o` numbers the ends (durable_group_ends.ord, from the group's `ends`): taken under
 * the same lock, the numbers follow commit order, so a reader that saw end n has seen every end
 * before it (ChildGroup.completions()). An end row left by a deleted run of the same id (a delete
 * that read before this end committed) is overwritten, and readers stop at the group's `ends`.
 */
export const groupEnds = (name: string, ended: string) => `${groupEndCounts(name, ended)},
${name}_o AS (
  INSERT INTO durable_group_ends AS o (run_id, seq, ord, child_index, status, error)
  SELECT e.parent_id, e.group_seq, b.before + row_number() OVER (PARTITION BY e.parent_id, e.group_seq ORDER BY e.group_index),
         e.group_index, e.status, e.error
  FROM ${ended} e JOIN ${name} b ON b.run_id = e.parent_id AND b.seq = e.group_seq
  ON CONFLICT (run_id, seq, ord) DO UPDATE SET child_index = excluded.child_index, status = excluded.status, error = excluded.error)`;

/** groupEnds without its end rows (CTEs `<name>_c` and `<name>`): Citus routes no CTE that inserts; see partitioned-checkpoints.ts. */
export const groupEndCounts = (name: string, ended: string) => `${name}_c AS (
  SELECT e.parent_id, e.group_seq, count(*) AS n, count(*) FILTER (WHERE e.status = 'SUCCEEDED') AS s,
         count(*) FILTER (WHERE e.status = 'FAILED') AS f, count(*) FILTER (WHERE e.status = 'CANCELLED') AS c
  FROM ${ended} e WHERE e.group_seq IS NOT NULL GROUP BY e.parent_id, e.group_seq),
${name} AS (
  UPDATE durable_child_groups g
  SET ended = g.ended + x.n, succeeded = g.succeeded + x.s, failed = g.failed + x.f, cancelled = g.cancelled + x.c, ends = g.ends + x.n
  FROM ${name}_c x WHERE g.run_id = x.parent_id AND g.seq = x.group_seq
  RETURNING g.run_id, g.seq, g.ends - x.n AS before, (g.wake_at > 0 AND g.ended >= g.wake_at AND g.ended - x.n < g.wake_at) AS crossed)`;

/**
 * Run history (durable_run_events): statements that change a run's state write its history row
 * in the same statement (a CTE), when their last parameter (the engine option `history`) is true.
 * A row's time is the column's default, the transaction's start, unless `timed`: then the select
 * gives it as a fourth column (a claim: see CLAIM_HISTORY_AT).
 */
export const history = (param: string, select: string, timed = false) => `
INSERT INTO durable_run_events (run_id, kind, detail${timed ? ', at' : ''})
${select} AND ${param}::boolean`;

/**
 * The time a claim's history rows record: the clock when the claim took the run, not now() (its
 * transaction's start). A limited claim's transaction may wait for the queue's lock (behind a
 * worker frozen while holding it, up to the idle limit) while the run's previous holder still
 * works; with now(), its 'claimed' row would come before that holder's last writes.
 */
export const CLAIM_HISTORY_AT = 'clock_timestamp()';

/**
 * A run is due when available_at <= DUE_BY. Timestamps are stored with millisecond precision
 * and Postgres rounds to it, so a run made due "now" may be stored up to 0.5 ms in the future:
 * the extra millisecond keeps such a run claimable (and its wake-up sent) at once.
 */
export const DUE_BY = `now() + interval '1 millisecond'`;

/** jsonb of a timestamptz in the codec's Date form ({"$durable":"Date","v":"…Z"}), so it decodes to a Date. */
export const dateJson = (expr: string) =>
  `jsonb_build_object('$durable', 'Date', 'v', to_char((${expr}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

/** now() + $ms, at the precision of the timestamptz(3) columns (so a stored wake time compares exactly). */
export const plusMs = (ms: string) => `(now() + ${ms} * interval '1 millisecond')::timestamptz(3)`;

/**
 * The run row as a CTE `run`, locked against concurrent updates (a send, a finishing child, a sweep)
 * but not against checkpoint inserts' foreign-key checks, if this execution still holds it
 * ($1 run, $2 epoch).
 */
export const HELD_RUN = `
run AS (
  SELECT id, available_at FROM durable_runs
  WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING'
  FOR NO KEY UPDATE)`;

/**
 * jsonb detail of who did it, for history rows of actions taken from outside (cancel, resume,
 * fork): {"actor": <param>} when the parameter (text) is set, else '{}'.
 */
export const actorDetail = (param: string) =>
  `CASE WHEN ${param}::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('actor', ${param}::text) END`;

/**
 * jsonb detail { actor } of the latest cancel request of run `runId` (its `cancel_requested` history
 * row), or '{}': the `cancelled` row a compensating run ends with names who asked, as a plain cancel's
 * does. One index probe (durable_run_events_run_idx); put it where only cancelled runs evaluate it.
 */
export const cancelActorDetail = (runId: string) =>
  `coalesce((SELECT jsonb_build_object('actor', e.detail -> 'actor') FROM durable_run_events e
  WHERE e.run_id = ${runId} AND e.kind = 'cancel_requested' AND e.detail ? 'actor' ORDER BY e.id DESC LIMIT 1), '{}'::jsonb)`;

/**
 * The sweep of expired leases' CTEs x and u (SWEEP_EXPIRED_LEASES in leases.ts, which documents them,
 * and its distributed form in partitioned-leases.ts): up to $1 RUNNING runs whose lease expired, locked
 * (SKIP LOCKED), made claimable again; u returns each with its queue and the lease it had.
 */
export const EXPIRED_LEASES = `x AS (
  SELECT id, lease_owner, lease_epoch FROM durable_runs
  WHERE status = 'RUNNING' AND lease_expires_at < now()
  ORDER BY lease_expires_at LIMIT $1
  FOR UPDATE SKIP LOCKED),
u AS (
  UPDATE durable_runs r
  -- Claimable at once, in its old place in the queue: a recovered run is not sent behind the backlog.
  SET status = 'PENDING', lease_owner = NULL, lease_expires_at = NULL, available_at = least(r.available_at, now()), updated_at = now()
  FROM x WHERE r.id = x.id
  RETURNING r.id, r.queue, x.lease_owner, x.lease_epoch)`;
