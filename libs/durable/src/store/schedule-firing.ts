/**
 * The scheduler's statements: the read of due schedules, and the fire statement, which advances a
 * schedule and inserts its slots' runs in one statement. A plan applies only if the schedule is
 * still at the revision it was made from (a pause, an update or another instance's fire changes
 * nothing).
 */
import * as mysql from './mysql/schedule-firing.js';
import { bufferedDue, fireAcrossPartitions } from './partitioned-schedules.js';
import { statement } from './statement.js';
import { dateJson, DUE_BY, history, WAKEUP_CHANNEL } from './sql-fragments.js';
import { toDate, type Store } from './store.js';
import { ACTIVE, dueScheduleOf, type DuePage, type FirePlan, type FireResult, type SlotFate } from './schedule-rows.js';
export { dueScheduleOf, type DuePage, type DueSchedule, type FirePlan, type FireResult, type SlotFate } from './schedule-rows.js';
/**
 * The scheduler's read, one page: active schedules of the workflows this instance knows ($2) due
 * within $1 ms, after the keyset ($4 next fire, $5 id; '-infinity' and '' for the first page), at
 * most $3; on the first page ($6) also schedules whose buffered slot can start (their active run
 * ended). Always one row at least: db_now and the earliest next fire of these schedules come with
 * it (id is null when nothing is due). Index: durable_schedules_due_idx (next_fire_at, id) WHERE
 * NOT paused; durable_schedules_buffered_idx. No locks: the fire statement checks the revision.
 */
const SELECT_DUE_SCHEDULES = statement(
  'select_due_schedules',
  `
WITH meta AS (
  SELECT now() AS db_now,
         (SELECT min(next_fire_at) FROM durable_schedules WHERE NOT paused AND workflow_name = ANY($2::text[])) AS earliest),
due AS (
  (SELECT id, workflow_name, cron, time_zone, catch_up, catch_up_window_ms::float8 AS catch_up_window_ms, overlap, revision,
          next_fire_at, buffered_slot
   FROM durable_schedules
   WHERE NOT paused AND next_fire_at <= now() + $1::float8 * interval '1 millisecond' AND workflow_name = ANY($2::text[])
     AND (next_fire_at, id) > ($4::timestamptz, $5::text)
   ORDER BY next_fire_at, id LIMIT $3)
  UNION ALL
  (SELECT s.id, s.workflow_name, s.cron, s.time_zone, s.catch_up, s.catch_up_window_ms::float8, s.overlap, s.revision,
          s.next_fire_at, s.buffered_slot
   FROM durable_schedules s
   WHERE $6::boolean AND s.buffered_slot IS NOT NULL AND NOT s.paused AND workflow_name = ANY($2::text[])
     AND s.next_fire_at > now() + $1::float8 * interval '1 millisecond'
     AND NOT EXISTS (SELECT 1 FROM durable_runs r WHERE r.id = s.last_run_id AND r.status IN ${ACTIVE})
   LIMIT $3))
SELECT meta.db_now, meta.earliest, due.* FROM meta LEFT JOIN due ON true`,
);

/**
 * The fate of candidate `ord` (0-based) of a schedule, from its overlap policy and whether its last
 * run is still active: run (start it), buffer (keep it on the row until the active run ends) or skip.
 * "skip": only the first, and only when idle; "bufferOne": the first runs when idle, the next one
 * waits (when busy the first waits); "allow": all run.
 */
const fate = (overlap: string, busy: string, ord: string) => `CASE
  WHEN ${overlap} = 'allow' OR (NOT ${busy} AND ${ord} = 0) THEN 'run'
  WHEN ${overlap} = 'bufferOne' AND ((${busy} AND ${ord} = 0) OR (NOT ${busy} AND ${ord} = 1)) THEN 'buffer'
  ELSE 'skip' END`;

/**
 * The fire statement: advances schedules and inserts their slots' runs, in one statement.
 * $1 the plans, a jsonb array: per schedule { id, rev (revision read), next (next fire to store),
 * queue, priority, timeoutMs, fireAt (when its latest slot is due), cands: [{ slot, runId, manual }] }.
 * A schedule's row is locked (SKIP LOCKED: another instance firing it right now wins) if it is
 * still at the revision read and fireAt has come (database clock). Each candidate's fate (see
 * `fate`) follows the overlap policy and whether the schedule's last run is still active; the
 * runs are inserted ON CONFLICT DO NOTHING (a slot's run id exists once). $2 app version, $3 history.
 * The run's input is { scheduleId, scheduledAt, input?, manual }; available_at is the slot plus a
 * random share of the schedule's jitter (or now), and so is order_at, its place in the queue (as a
 * start with a runAt, see QUEUE_ORDER in leases.ts): a run fired late (a missed slot caught up) takes
 * its place behind the work started before it fired, a jittered one is not in the claim index's way
 * before it is due. One wake-up per queue with a due run.
 * Everything is computed per schedule row (lateral, no join between the statement's own row sets,
 * which the planner cannot estimate). Returns one row per schedule advanced, with its fates.
 * Index: the primary key of durable_schedules; of durable_runs for the last run's status.
 */
const FIRE_SCHEDULES = statement(
  'fire_schedules',
  `
WITH s AS (
  SELECT sc.id, sc.workflow_name, sc.overlap, sc.input, sc.jitter_ms, p.next, p.queue, p.priority, p."timeoutMs" AS timeout_ms, p.cands,
         sc.overlap <> 'allow' AND EXISTS (SELECT 1 FROM durable_runs r WHERE r.id = sc.last_run_id AND r.status IN ${ACTIVE}) AS busy
  FROM jsonb_to_recordset($1::jsonb) AS p(id text, rev int, next timestamptz, queue text, priority int, "timeoutMs" float8,
                                          "fireAt" timestamptz, cands jsonb)
  JOIN durable_schedules sc ON sc.id = p.id
  WHERE sc.revision = p.rev AND p."fireAt" <= ${DUE_BY}
  FOR UPDATE OF sc SKIP LOCKED),
ins AS (
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, app_version, schedule_id)
  SELECT x.run_id, s.workflow_name, s.queue, 'PENDING',
         jsonb_build_object('scheduleId', s.id, 'scheduledAt', ${dateJson('x.slot')}, 'manual', x.manual)
           || CASE WHEN s.input IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('input', s.input) END,
         s.priority, x.due_at, x.due_at, now() + s.timeout_ms * interval '1 millisecond', $2, s.id
  FROM s CROSS JOIN LATERAL (
    SELECT c.*, greatest(now(), c.slot + floor(random() * (s.jitter_ms + 1)) * interval '1 millisecond') AS due_at FROM (
      SELECT (e.c->>'slot')::timestamptz AS slot, e.c->>'runId' AS run_id, (e.c->>'manual')::boolean AS manual
      FROM jsonb_array_elements(s.cands) WITH ORDINALITY AS e(c, ord)
      WHERE ${fate('s.overlap', 's.busy', '(e.ord - 1)')} = 'run') c) x
  ON CONFLICT (id) DO NOTHING
  RETURNING id, workflow_name, queue, schedule_id, available_at <= ${DUE_BY} AS due),
u AS (
  UPDATE durable_schedules sc
  SET next_fire_at = s.next, revision = sc.revision + 1, updated_at = now(),
      last_run_id = coalesce(l.run_id, sc.last_run_id),
      last_slot_at = coalesce(l.slot, sc.last_slot_at),
      last_fired_at = CASE WHEN l.run_id IS NULL THEN sc.last_fired_at ELSE now() END,
      buffered_slot = CASE WHEN s.overlap = 'bufferOne' THEN (s.cands -> (CASE WHEN s.busy THEN 0 ELSE 1 END) ->> 'slot')::timestamptz END
  FROM s CROSS JOIN LATERAL (
    -- the last candidate that runs: the last one ('allow'), else the first one when idle
    SELECT e->>'runId' AS run_id, (e->>'slot')::timestamptz AS slot
    FROM (SELECT CASE WHEN s.overlap = 'allow' THEN s.cands -> -1 WHEN NOT s.busy THEN s.cands -> 0 END AS e) t) l
  WHERE sc.id = s.id
  RETURNING sc.id),
hist AS (${history('$3', `SELECT id, 'created', jsonb_build_object('workflow', workflow_name, 'queue', queue, 'schedule', schedule_id) FROM ins WHERE true`)}),
woken AS (SELECT count(pg_notify('${WAKEUP_CHANNEL}', q.queue)) AS n FROM (SELECT DISTINCT queue FROM ins WHERE due) q)
SELECT s.id, (SELECT coalesce(jsonb_agg(jsonb_build_array(e.c->>'runId', ${fate('s.overlap', 's.busy', '(e.ord - 1)')}) ORDER BY e.ord), '[]'::jsonb)
              FROM jsonb_array_elements(s.cands) WITH ORDINALITY AS e(c, ord)) AS fates,
       (SELECT n FROM woken) AS woken
FROM s`,
);

/** One page of due schedules (see SELECT_DUE_SCHEDULES). */
export async function selectDueSchedules(
  store: Store,
  workflows: string[],
  lookaheadMs: number,
  limit: number,
  after: { nextFireAt: number; id: string } | null,
): Promise<DuePage> {
  if (store.sql.dialect === 'mysql') return mysql.selectDueSchedules(store, workflows, lookaheadMs, limit, after);
  const distributed = store.layout.partitions !== null;
  const rows = await store.sql.query<{
    db_now: unknown;
    earliest: unknown;
    id: string | null;
    workflow_name: string;
    cron: string;
    time_zone: string;
    catch_up: string;
    catch_up_window_ms: number;
    overlap: string;
    revision: number;
    next_fire_at: unknown;
    buffered_slot: unknown;
  }>(SELECT_DUE_SCHEDULES, [
    lookaheadMs,
    workflows,
    limit,
    after ? new Date(after.nextFireAt).toISOString() : '-infinity',
    after ? after.id : '',
    after === null && !distributed,
  ]);
  const first = rows[0];
  const due = rows.filter((r) => r.id !== null).map(dueScheduleOf);
  // Distributed mode: a schedule's last run is in its own partition, so the buffered ones are read apart.
  if (after === null && distributed) due.push(...(await bufferedDue(store, workflows, lookaheadMs, limit)));
  return { dbNow: toDate(first.db_now)!.getTime(), earliest: toDate(first.earliest)?.getTime() ?? null, rows: due };
}

/** Fires plans in one statement (see FIRE_SCHEDULES). */
export async function fireSchedules(store: Store, plans: FirePlan[], appVersion: string | null): Promise<FireResult> {
  if (store.sql.dialect === 'mysql') return mysql.fireSchedules(store, plans, appVersion);
  if (store.layout.partitions !== null) return fireAcrossPartitions(store, plans, appVersion);
  const iso = (ms: number) => new Date(ms).toISOString();
  const json = JSON.stringify(
    plans.map((p) => ({
      id: p.id,
      rev: p.revision,
      next: iso(p.nextFireAt),
      queue: p.queue,
      priority: p.priority,
      timeoutMs: p.timeoutMs,
      fireAt: iso(p.fireAt),
      cands: p.candidates.map((c) => ({ slot: iso(c.slot), runId: c.runId, manual: c.manual })),
    })),
  );
  const rows = await store.sql.query<{ id: string; fates: unknown }>(FIRE_SCHEDULES, [json, appVersion, store.history]);
  const out: FireResult = new Map();
  for (const r of rows) {
    const fates = (typeof r.fates === 'string' ? JSON.parse(r.fates) : r.fates) as Array<[string, SlotFate]>;
    out.set(
      r.id,
      fates.map(([runId, f]) => ({ runId, fate: f })),
    );
  }
  return out;
}
