/**
 * The statements of durable waits and composition: sleep, messages (send/recv), events
 * (setEvent/getEvent), child workflows, and the run history. Same rules as sql.ts: one
 * statement per round trip, every write an executor makes is fenced by (run id, lease epoch),
 * time comes from the database clock.
 *
 * How a waiting run is woken without losing a wake-up: a signal (a message sent to the run, a
 * child of it finishing) always touches the run row — a WAITING run becomes due
 * (available_at ≤ now()), a RUNNING run gets its available_at bumped (see signalRuns in sql.ts).
 * The executor remembers the available_at it last saw (its "token"); RESOLVE_WAITS locks the run
 * row and suspends only if the token is unchanged. A signal that committed after the statement's
 * snapshot therefore either changed the token (the executor looks again) or finds the run
 * WAITING (and makes it due).
 */
import { DUE_BY, WAKEUP_CHANNEL, signalRuns } from './sql.js';

/** jsonb of a timestamptz in the codec's Date form ({"$durable":"Date","v":"…Z"}), so it decodes to a Date. */
const dateJson = (expr: string) =>
  `jsonb_build_object('$durable', 'Date', 'v', to_char((${expr}) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`;

/** now() + $ms, at the precision of the timestamptz(3) columns (so a stored wake time compares exactly). */
const plusMs = (ms: string) => `(now() + ${ms} * interval '1 millisecond')::timestamptz(3)`;

/**
 * The run row, locked against concurrent updates (a send, a finishing child, a sweep) but not
 * against checkpoint inserts' foreign-key checks, if this execution still holds it ($1 run, $2 epoch).
 */
const HELD_RUN = `
run AS (
  SELECT id, available_at FROM durable_runs
  WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING'
  FOR NO KEY UPDATE)`;

/**
 * Resolve the pending waits of one execution and, when nothing can progress, suspend the run —
 * one statement. Waits are passed as parallel arrays (one element per wait):
 *   $7 seq, $8 kind ('sleep' | 'recv' | 'child'), $9 step name, $10 key (recv: topic, child: child run id),
 *   $11 ms (a timer not recorded yet: sleep length / recv timeout), $12 due (a recorded wake time / recv deadline).
 * What it does, fenced by $1 run / $2 epoch:
 *   - recv: the k-th pending recv of a topic (in seq order) consumes the k-th oldest unconsumed message of
 *     that topic; its step is recorded SUCCEEDED with the payload and the message marked consumed
 *     (consumed_seq) in the same statement — exactly once. Without a message: a recv whose deadline
 *     passed is recorded SUCCEEDED with null (timeout); a new timeout is recorded as a WAITING step
 *     holding its deadline, so a replay keeps the original deadline.
 *   - child: a child run that ended (or no longer exists) is recorded as {status, output, error}.
 *   - sleep: a new sleep is recorded SUCCEEDED with its wake time (output: a Date), once.
 *   - suspend (only if $4 allows it, nothing was resolved, and the run's available_at still equals
 *     the token $3): status WAITING, available_at = the earliest timer (or now() + $5 ms, a safety
 *     re-check for waits without a timer), lease released, attempt reset (a suspension is not a crash).
 * $6: write the history row ('suspended'). Returns held (0 = lease lost), the current token, the steps
 * written, and the suspension (until, queue) if any. Index: durable_messages_pending_idx.
 */
export const RESOLVE_WAITS = `
WITH ${HELD_RUN},
w AS (
  SELECT * FROM unnest($7::int[], $8::text[], $9::text[], $10::text[], $11::float8[], $12::timestamptz[])
    AS w(seq, kind, name, key, ms, due)
  WHERE EXISTS (SELECT 1 FROM run)),
rw AS (SELECT w.*, row_number() OVER (PARTITION BY w.key ORDER BY w.seq) AS rk FROM w WHERE w.kind = 'recv'),
tp AS (SELECT key AS topic, count(*) AS n FROM rw GROUP BY key),
msg AS (
  SELECT m.id, m.topic, m.payload, row_number() OVER (PARTITION BY m.topic ORDER BY m.id) AS rk
  FROM tp CROSS JOIN LATERAL (
    SELECT id, topic, payload FROM durable_messages
    WHERE run_id = $1 AND topic = tp.topic AND consumed_at IS NULL
    ORDER BY id LIMIT tp.n) m),
got AS (SELECT rw.seq, rw.name, msg.id AS msg_id, msg.payload FROM rw JOIN msg ON msg.topic = rw.key AND msg.rk = rw.rk),
rdl AS (
  SELECT rw.seq, rw.name, rw.due IS NULL AS fresh, coalesce(rw.due, ${plusMs('rw.ms')}) AS deadline
  FROM rw WHERE (rw.due IS NOT NULL OR rw.ms IS NOT NULL) AND rw.seq NOT IN (SELECT seq FROM got)),
cd AS (
  SELECT w.seq, w.name, c.id IS NULL AS missing, c.status, c.output, c.error
  FROM w LEFT JOIN durable_runs c ON c.id = w.key
  WHERE w.kind = 'child' AND (c.id IS NULL OR c.status IN ('SUCCEEDED','FAILED','CANCELLED'))),
sl AS (SELECT seq, name, ${plusMs('ms')} AS wake FROM w WHERE kind = 'sleep' AND due IS NULL),
res AS (
  SELECT seq, name, 'SUCCEEDED' AS status, payload AS output, true AS resolves FROM got
  UNION ALL
  SELECT seq, name, CASE WHEN deadline <= ${DUE_BY} THEN 'SUCCEEDED' ELSE 'WAITING' END,
         CASE WHEN deadline <= ${DUE_BY} THEN 'null'::jsonb ELSE jsonb_build_object('deadline', ${dateJson('deadline')}) END,
         deadline <= ${DUE_BY}
  FROM rdl WHERE fresh OR deadline <= ${DUE_BY}
  UNION ALL
  SELECT seq, name, 'SUCCEEDED',
         CASE WHEN missing THEN jsonb_build_object('status', 'MISSING')
              ELSE jsonb_build_object('status', status, 'output', output, 'error', error) END,
         true
  FROM cd
  UNION ALL
  SELECT seq, name, 'SUCCEEDED', ${dateJson('wake')}, false FROM sl),
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
nxt AS (
  SELECT least(min(t), now() + $5::float8 * interval '1 millisecond') AS at FROM (
    SELECT wake AS t FROM sl
    UNION ALL SELECT due FROM w WHERE kind = 'sleep' AND due IS NOT NULL
    UNION ALL SELECT deadline FROM rdl) x),
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
       (SELECT coalesce(json_agg(json_build_object('seq', seq, 'status', status, 'output', output)), '[]'::json) FROM ins) AS steps`;

/**
 * Durable.startChild (every call made in the same tick, e.g. a Promise.all fan-out, in one
 * statement): create the child runs (PENDING, parent_id = $1) and checkpoint the parent's steps,
 * fenced by the parent's epoch: a child exists iff its step is recorded. Arrays, one element per
 * child: $3 seq, $4 step name, $5 child id, $6 workflow, $7 queue, $8 input, $9 priority,
 * $10 delay ms, $11 timeout ms, $12 step output; $13 app version, $14 history.
 * An existing child id of the same workflow is adopted (idempotent start); of another workflow,
 * nothing is written for it and `conflicts` names it. One wake-up per queue.
 */
export const START_CHILDREN = `
WITH run AS (
  SELECT id FROM durable_runs WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING' FOR SHARE),
c AS (
  SELECT * FROM unnest($3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::float8[], $11::float8[], $12::text[])
    AS c(seq, step, id, wf, q, inp, pr, delay_ms, timeout_ms, out)
  WHERE EXISTS (SELECT 1 FROM run)),
other AS (SELECT c.seq, r.workflow_name FROM c JOIN durable_runs r ON r.id = c.id WHERE r.workflow_name <> c.wf),
ok AS (SELECT * FROM c WHERE c.seq NOT IN (SELECT seq FROM other)),
child AS (
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, deadline_at, parent_id, app_version)
  SELECT id, wf, q, 'PENDING', inp::jsonb, pr, now() + coalesce(delay_ms, 0) * interval '1 millisecond',
         now() + timeout_ms * interval '1 millisecond', $1, $13
  FROM ok
  ON CONFLICT (id) DO NOTHING
  RETURNING id, workflow_name, queue, available_at <= ${DUE_BY} AS due),
step AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
  SELECT $1, seq, step, 'SUCCEEDED', out::jsonb, 1, now(), now() FROM ok
  ON CONFLICT (run_id, seq) DO NOTHING
  RETURNING seq),
hist AS (
  INSERT INTO durable_run_events (run_id, kind, detail)
  SELECT id, 'created', jsonb_build_object('workflow', workflow_name, 'queue', queue, 'parent', $1::text) FROM child WHERE $14::boolean),
woken AS (SELECT count(pg_notify('${WAKEUP_CHANNEL}', q.queue)) AS n FROM (SELECT DISTINCT queue FROM child WHERE due) q)
SELECT (SELECT count(*) FROM run)::int AS held,
       (SELECT coalesce(json_agg(json_build_object('seq', seq, 'workflow', workflow_name)), '[]'::json) FROM other) AS conflicts,
       (SELECT n FROM woken) AS woken`;

/**
 * Durable.setEvent: checkpoint the step and upsert the event's latest value, one statement, fenced.
 * $3 seq, $4 step name, $5 key, $6 value (jsonb). Returns held (0 = lease lost).
 */
export const SET_EVENT = `
WITH run AS (
  SELECT id FROM durable_runs WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING' FOR SHARE),
step AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
  SELECT run.id, $3, $4, 'SUCCEEDED', NULL, 1, now(), now() FROM run
  ON CONFLICT (run_id, seq) DO NOTHING
  RETURNING run_id),
ev AS (
  INSERT INTO durable_events (run_id, key, value, updated_at)
  SELECT run_id, $5, $6::jsonb, now() FROM step
  ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
  RETURNING key)
SELECT (SELECT count(*) FROM run)::int AS held, (SELECT count(*) FROM ev)::int AS written`;

/** WorkflowClient.getEvent: the latest value of key $2 of run $1 (if any), and the run's status. */
export const SELECT_EVENT = `
SELECT r.status, e.value, e.run_id IS NOT NULL AS found
FROM (SELECT $1::text AS id) q
LEFT JOIN durable_runs r ON r.id = q.id
LEFT JOIN durable_events e ON e.run_id = q.id AND e.key = $2`;

/**
 * WorkflowClient.send: store a message for run $1 on topic $2 ($3 payload jsonb, $4 idempotency key
 * or null) and signal the run (a WAITING run becomes due and its queue is woken; a RUNNING one is
 * told through SIGNAL_CHANNEL). Inside the caller's transaction, the message and the signal exist
 * iff it commits. A repeated idempotency key for the same run inserts nothing.
 * Returns found (the run exists), sent (1 = new message).
 */
export const SEND_MESSAGE = `
WITH r AS (SELECT id FROM durable_runs WHERE id = $1),
ins AS (
  INSERT INTO durable_messages (run_id, topic, payload, idempotency_key)
  SELECT id, $2, $3::jsonb, $4 FROM r
  ON CONFLICT (run_id, idempotency_key) DO NOTHING
  RETURNING run_id),
${signalRuns('sig', 'SELECT run_id FROM ins')}
SELECT (SELECT count(*) FROM r)::int AS found, (SELECT count(*) FROM ins)::int AS sent, (SELECT n FROM sig_n) AS signalled`;

/**
 * Durable.send (from workflow code): checkpoint the sender's step and store the message in one
 * statement, fenced by the sender's epoch — sent exactly once, however often the sender replays.
 * $1 sender run, $2 epoch, $3 seq, $4 step name, $5 target run, $6 topic, $7 payload (jsonb),
 * $8 idempotency key (sender run + seq). Returns held (0 = lease lost) and found (target exists).
 */
export const SEND_FROM_RUN = `
WITH run AS (
  SELECT id FROM durable_runs WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING' FOR SHARE),
target AS (SELECT id FROM durable_runs WHERE id = $5),
step AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
  SELECT run.id, $3, $4, 'SUCCEEDED', NULL, 1, now(), now() FROM run, target
  ON CONFLICT (run_id, seq) DO NOTHING
  RETURNING seq),
ins AS (
  INSERT INTO durable_messages (run_id, topic, payload, idempotency_key)
  SELECT $5, $6, $7::jsonb, $8 FROM step
  ON CONFLICT (run_id, idempotency_key) DO NOTHING
  RETURNING run_id),
${signalRuns('sig', 'SELECT run_id FROM ins')}
SELECT (SELECT count(*) FROM run)::int AS held, (SELECT count(*) FROM target)::int AS found, (SELECT n FROM sig_n) AS signalled`;

/** History of one run, oldest first (WorkflowClient.getRunEvents). Index: durable_run_events_run_idx. */
export const SELECT_RUN_EVENTS = `
SELECT e.id::text AS id, e.kind, e.detail, e.at FROM durable_run_events e WHERE e.run_id = $1 ORDER BY e.id LIMIT $2`;

/** One history row written on its own (rare paths only: a step retried, a lease found lost). */
export const INSERT_RUN_EVENT = `
INSERT INTO durable_run_events (run_id, kind, detail) VALUES ($1, $2, $3::jsonb) RETURNING id`;

