/**
 * The admin API's SQL (read-mostly; the only write is fork). Every statement is
 * parameterized; the only values spliced into the text are constants chosen from fixed sets
 * (sort column and direction). Each names the index it relies on.
 *
 * Optional filters use `($n IS NULL OR …)`: node-postgres and Prisma send unnamed statements,
 * which Postgres plans with the actual values, so an absent filter folds away and the
 * remaining conditions can use their index.
 *
 * Indexes (libs/durable/prisma/durable.prisma):
 *   durable_runs_created_idx (created_at)              list sorted by created, no other selective filter
 *   durable_runs_updated_idx (updated_at)              list sorted by updated; stats of the last window
 *   durable_runs_status_created_idx (status, created_at)       status filter; per-status counts; active runs
 *   durable_runs_workflow_created_idx (workflow_name, created_at) workflow filter
 *   durable_runs_id_pattern_idx (id text_pattern_ops)  id prefix (LIKE 'abc%'), any collation
 *   durable_runs_parent_idx (parent_id)                parentId filter, children of a run
 *   durable_runs_finished_idx (finished_at) partial    finished time range
 *   durable_runs_claim_idx (queue, …) partial          queue filter on claimable runs (other rows: a filter
 *                                                      on the ordered index; apps have few queues)
 *   durable_steps_pkey (run_id, seq), durable_events_pkey (run_id, key),
 *   durable_messages_idempotency_key (run_id, …), durable_run_events_run_idx (run_id, id)   run detail
 */
import { WAKEUP_CHANNEL } from './sql.js';

export const RUN_STATUSES = ['PENDING', 'RUNNING', 'WAITING', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;

/** Nested values (step outputs, messages, events) larger than this come back as a preview. */
export const CLIP_BYTES = 64 * 1024;
/** Most rows of each kind returned with one run. */
export const DETAIL_LIMITS = { steps: 2000, messages: 500, events: 500, history: 1000, children: 500 } as const;
/** Per-status counts of the runs list stop at this many rows per status (index-only, bounded). */
export const COUNT_CAP = 10_000;

/** A jsonb value, or { $truncated, bytes, preview } when its text is longer than CLIP_BYTES. */
const clip = (col: string) => `CASE WHEN octet_length(${col}::text) > ${CLIP_BYTES}
  THEN jsonb_build_object('$truncated', true, 'bytes', octet_length(${col}::text), 'preview', left(${col}::text, 2000))
  ELSE ${col} END`;

/**
 * The runs-list filter, parameters numbered from $1: statuses text[] (only when withStatus),
 * workflows text[], queues text[], created from/to, finished from/to (timestamptz; from
 * inclusive, to exclusive), id LIKE pattern (escaped, ends with %), parent id. Null = no filter.
 */
function runFilter(withStatus: boolean): { sql: string; next: number } {
  let n = 0;
  const p = () => `$${++n}`;
  const parts: string[] = [];
  if (withStatus) {
    const s = p();
    parts.push(`(${s}::text[] IS NULL OR r.status = ANY(${s}::text[]))`);
  }
  const wf = p(), q = p(), cf = p(), ct = p(), ff = p(), ft = p(), id = p(), par = p();
  parts.push(
    `(${wf}::text[] IS NULL OR r.workflow_name = ANY(${wf}::text[]))`,
    `(${q}::text[] IS NULL OR r.queue = ANY(${q}::text[]))`,
    `(${cf}::timestamptz IS NULL OR r.created_at >= ${cf}::timestamptz)`,
    `(${ct}::timestamptz IS NULL OR r.created_at < ${ct}::timestamptz)`,
    `(${ff}::timestamptz IS NULL OR r.finished_at >= ${ff}::timestamptz)`,
    `(${ft}::timestamptz IS NULL OR r.finished_at < ${ft}::timestamptz)`,
    `(${id}::text IS NULL OR r.id LIKE ${id}::text)`,
    `(${par}::text IS NULL OR r.parent_id = ${par}::text)`,
  );
  return { sql: parts.join('\n  AND '), next: n + 1 };
}

/** Columns of a run in lists (no input/output: a list stays small). */
const LIST_COLUMNS = `r.id, r.workflow_name, r.queue, r.status, r.priority, r.attempt, r.parent_id, r.app_version,
  r.lease_owner, r.created_at, r.started_at, r.finished_at, r.updated_at, r.available_at, r.deadline_at,
  r.error->>'message' AS error_message,
  (SELECT count(*) FROM durable_steps s WHERE s.run_id = r.id)::int AS step_count`;

export type SortKey = 'created' | 'updated';
export type SortOrder = 'asc' | 'desc';

function listRunsSql(sort: SortKey, order: SortOrder): string {
  const col = sort === 'created' ? 'r.created_at' : 'r.updated_at';
  const f = runFilter(true);
  const ts = `$${f.next}`, id = `$${f.next + 1}`, limit = `$${f.next + 2}`;
  const cmp = order === 'desc' ? '<' : '>';
  const dir = order === 'desc' ? 'DESC' : 'ASC';
  return `
SELECT ${LIST_COLUMNS}
FROM durable_runs r
WHERE ${f.sql}
  AND (${ts}::timestamptz IS NULL OR (${col} ${cmp}= ${ts}::timestamptz AND (${col} ${cmp} ${ts}::timestamptz OR r.id ${cmp} ${id}::text)))
ORDER BY ${col} ${dir}, r.id ${dir}
LIMIT ${limit}`;
}

/**
 * One page of runs, keyset-paginated on (created_at, id) or (updated_at, id): stable under
 * inserts (a new run never shifts a page). Parameters: the filter ($1–$9), then cursor
 * timestamp, cursor id (both null on the first page), limit. Indexes: see the file comment
 * (the chosen order's index scanned backward/forward, or the filter's own index).
 */
export const LIST_RUNS: Record<`${SortKey}_${SortOrder}`, string> = {
  created_desc: listRunsSql('created', 'desc'),
  created_asc: listRunsSql('created', 'asc'),
  updated_desc: listRunsSql('updated', 'desc'),
  updated_asc: listRunsSql('updated', 'asc'),
};

/**
 * Runs per status for the list's filter (status itself excepted, so the numbers can label
 * status tabs), each count stopping at $9 + 1 rows. Parameters: the filter without status
 * ($1–$8), then the cap. One bounded scan per status, each with its status as a constant so
 * the planner picks per status: durable_runs_status_created_idx for the rare ones (index-only),
 * a scan that stops after cap rows for the common one; a selective filter's own index otherwise.
 */
export const COUNT_RUNS_BY_STATUS = (() => {
  const f = runFilter(false);
  const one = (s: string) => `(SELECT count(*) FROM (
    SELECT 1 FROM durable_runs r WHERE r.status = '${s}' AND ${f.sql}
    LIMIT $${f.next}::int + 1) x)::int AS "${s}"`;
  return `SELECT ${RUN_STATUSES.map(one).join(',\n  ')}`;
})();

/**
 * One run with everything about it, in one round trip. $1 run id. Indexes: durable_runs_pkey,
 * durable_steps_pkey, durable_messages_idempotency_key (leading run_id), durable_events_pkey,
 * durable_run_events_run_idx, durable_runs_parent_idx.
 */
export const SELECT_RUN_DETAIL = `
SELECT r.id, r.workflow_name, r.queue, r.status, r.input, r.output, r.error, r.priority, r.attempt,
  r.lease_owner, r.lease_expires_at, r.lease_epoch, r.parent_id, r.app_version, r.deadline_at, r.available_at,
  r.created_at, r.started_at, r.finished_at, r.updated_at, now() AS db_now,
  (SELECT count(*) FROM durable_steps s WHERE s.run_id = r.id)::int AS steps_total,
  (SELECT coalesce(json_agg(json_build_object('seq', s.seq, 'name', s.name, 'status', s.status, 'attempts', s.attempts,
      'startedAt', s.started_at, 'finishedAt', s.finished_at,
      'durationMs', extract(epoch FROM s.finished_at - s.started_at) * 1000,
      'output', ${clip('s.output')}, 'error', ${clip('s.error')}) ORDER BY s.seq), '[]'::json)
   FROM (SELECT * FROM durable_steps WHERE run_id = r.id ORDER BY seq LIMIT ${DETAIL_LIMITS.steps}) s) AS steps,
  (SELECT count(*) FROM durable_messages m WHERE m.run_id = r.id)::int AS messages_total,
  (SELECT coalesce(json_agg(json_build_object('id', m.id::text, 'topic', m.topic, 'payload', ${clip('m.payload')},
      'idempotencyKey', m.idempotency_key, 'createdAt', m.created_at, 'consumedSeq', m.consumed_seq,
      'consumedAt', m.consumed_at) ORDER BY m.id), '[]'::json)
   FROM (SELECT * FROM durable_messages WHERE run_id = r.id ORDER BY id DESC LIMIT ${DETAIL_LIMITS.messages}) m) AS messages,
  (SELECT count(*) FROM durable_events e WHERE e.run_id = r.id)::int AS events_total,
  (SELECT coalesce(json_agg(json_build_object('key', e.key, 'value', ${clip('e.value')}, 'updatedAt', e.updated_at)
      ORDER BY e.key), '[]'::json)
   FROM (SELECT * FROM durable_events WHERE run_id = r.id ORDER BY key LIMIT ${DETAIL_LIMITS.events}) e) AS events,
  (SELECT count(*) FROM durable_run_events h WHERE h.run_id = r.id)::int AS history_total,
  (SELECT coalesce(json_agg(json_build_object('id', h.id::text, 'kind', h.kind, 'detail', ${clip('h.detail')}, 'at', h.at)
      ORDER BY h.id), '[]'::json)
   FROM (SELECT * FROM durable_run_events WHERE run_id = r.id ORDER BY id DESC LIMIT ${DETAIL_LIMITS.history}) h) AS history,
  (SELECT count(*) FROM durable_runs c WHERE c.parent_id = r.id)::int AS children_total,
  (SELECT coalesce(json_agg(json_build_object('id', c.id, 'workflowName', c.workflow_name, 'status', c.status,
      'createdAt', c.created_at, 'finishedAt', c.finished_at) ORDER BY c.created_at, c.id), '[]'::json)
   FROM (SELECT * FROM durable_runs WHERE parent_id = r.id ORDER BY created_at, id LIMIT ${DETAIL_LIMITS.children}) c) AS children
FROM durable_runs r WHERE r.id = $1`;

/** Status of a run after cancel/resume. $1 run id. Index: durable_runs_pkey. */
export const SELECT_RUN_SUMMARY = `SELECT id, workflow_name, status, updated_at FROM durable_runs WHERE id = $1`;

/**
 * What fork needs to know about its source: workflow and the next free step seq.
 * $1 run id. Indexes: durable_runs_pkey, durable_steps_pkey.
 */
export const SELECT_FORK_SOURCE = `
SELECT r.id, r.workflow_name, r.queue, (SELECT coalesce(max(s.seq) + 1, 0) FROM durable_steps s WHERE s.run_id = r.id)::int AS next_seq
FROM durable_runs r WHERE r.id = $1`;

/**
 * Fork: a new PENDING run ($2) of the same workflow, queue, priority and input as run $1, with
 * copies of its checkpoints whose seq < $3, so it replays those and executes from step $3 on.
 * The deadline keeps the source's timeout length, counted from now; $4 is this app's version.
 * The history of the new run records where it came from (unless $5, history, is false); a
 * wake-up goes to its queue.
 * (The steps' foreign key is checked at the end of the statement, after the run row exists.)
 */
export const FORK_RUN = `
WITH src AS (SELECT * FROM durable_runs WHERE id = $1),
ins AS (
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, deadline_at, app_version)
  SELECT $2, src.workflow_name, src.queue, 'PENDING', src.input, src.priority, now(),
         now() + (src.deadline_at - src.created_at), $4
  FROM src
  RETURNING id, queue),
copied AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, error, attempts, started_at, finished_at)
  SELECT ins.id, s.seq, s.name, s.status, s.output, s.error, s.attempts, s.started_at, s.finished_at
  FROM ins JOIN durable_steps s ON s.run_id = $1 AND s.seq < $3::int
  RETURNING seq),
hist AS (
  INSERT INTO durable_run_events (run_id, kind, detail)
  SELECT ins.id, 'forked', jsonb_build_object('from', $1::text, 'fromStep', $3::int) FROM ins WHERE $5::boolean)
SELECT ins.id, (SELECT count(*) FROM copied)::int AS copied, pg_notify('${WAKEUP_CHANNEL}', ins.queue) IS NULL AS notified
FROM ins`;

/**
 * Unfinished runs per workflow, queue and status, with the oldest due claimable run and the
 * number of RUNNING runs whose lease expired (their worker is gone; the sweeper will hand
 * them back). Index: durable_runs_status_created_idx (status = ANY: a bitmap scan of the
 * unfinished rows only).
 */
export const STATS_ACTIVE = `
SELECT workflow_name, queue, status, count(*)::float8 AS n,
       min(available_at) FILTER (WHERE status IN ('PENDING','WAITING') AND available_at <= now()) AS oldest_due,
       count(*) FILTER (WHERE status = 'RUNNING' AND lease_expires_at < now())::float8 AS expired
FROM durable_runs
WHERE status = ANY(ARRAY['PENDING','RUNNING','WAITING'])
GROUP BY workflow_name, queue, status`;

/**
 * Runs that finished in the last $1 minutes per workflow, queue and status. finished_at ≤
 * updated_at always (every write that sets one sets the other), so either index bounds the
 * scan to the window's rows. Index: durable_runs_finished_idx or durable_runs_updated_idx.
 */
export const STATS_FINISHED = `
SELECT workflow_name, queue, status, count(*)::float8 AS n
FROM durable_runs
WHERE updated_at >= now() - $1::float8 * interval '1 minute'
  AND finished_at >= now() - $1::float8 * interval '1 minute'
GROUP BY workflow_name, queue, status`;

/**
 * Started and finished runs per minute over the last 60 minutes, per workflow and queue
 * (minutes with nothing are absent). started_at ≤ updated_at and finished_at ≤ updated_at
 * always, so only rows updated in the last hour are read. Index: durable_runs_updated_idx.
 */
export const STATS_PER_MINUTE = `
WITH recent AS (
  SELECT workflow_name, queue, status, started_at, finished_at FROM durable_runs
  WHERE updated_at >= date_trunc('minute', now()) - interval '59 minutes'),
ev AS (
  SELECT workflow_name, queue, date_trunc('minute', started_at) AS minute, 1 AS started, 0 AS succeeded, 0 AS failed, 0 AS cancelled
  FROM recent WHERE started_at >= date_trunc('minute', now()) - interval '59 minutes'
  UNION ALL
  SELECT workflow_name, queue, date_trunc('minute', finished_at), 0,
         (status = 'SUCCEEDED')::int, (status = 'FAILED')::int, (status = 'CANCELLED')::int
  FROM recent WHERE finished_at >= date_trunc('minute', now()) - interval '59 minutes')
SELECT workflow_name, queue, minute, sum(started)::float8 AS started, sum(succeeded)::float8 AS succeeded,
       sum(failed)::float8 AS failed, sum(cancelled)::float8 AS cancelled
FROM ev GROUP BY workflow_name, queue, minute`;

/** The database clock (stats are aligned to it, never to the app's). */
export const SELECT_NOW = `SELECT now() AS db_now, date_trunc('minute', now()) AS minute`;
