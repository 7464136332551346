/**
 * Schedules (durable_schedules): the scheduler's read of due schedules and its fire statement,
 * which advances a schedule and inserts its slots' runs in one statement; the client API's reads
 * and writes. Every write bumps `revision`: a write computed from a read applies only if the row
 * is still at the revision read (a plan made before a pause, an update or another instance's fire
 * changes nothing).
 */
import { statement } from './statement.js';
import { dateJson, DUE_BY, history, WAKEUP_CHANNEL } from './sql-fragments.js';
import { toDate, type Store } from './store.js';
import type { RunStatus } from './rows.js';

/** A schedule row as the store returns it. */
export interface ScheduleRow {
  id: string;
  workflowName: string;
  source: 'declared' | 'runtime';
  cron: string;
  timeZone: string;
  /** As stored (codec JSON), or null. */
  input: unknown;
  catchUp: string;
  catchUpWindowMs: number;
  overlap: string;
  jitterMs: number;
  paused: boolean;
  nextFireAt: Date;
  bufferedSlot: Date | null;
  lastRunId: string | null;
  lastSlotAt: Date | null;
  lastFiredAt: Date | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
  /** Status of lastRunId (null when it does not exist any more). */
  lastRunStatus: RunStatus | null;
}

const COLUMNS = `s.id, s.workflow_name, s.source, s.cron, s.time_zone, s.input, s.catch_up, s.catch_up_window_ms::float8 AS catch_up_window_ms,
  s.overlap, s.jitter_ms, s.paused, s.next_fire_at, s.buffered_slot, s.last_run_id, s.last_slot_at, s.last_fired_at, s.revision,
  s.created_at, s.updated_at, (SELECT r.status FROM durable_runs r WHERE r.id = s.last_run_id) AS last_run_status`;

const ACTIVE = `('PENDING','RUNNING','WAITING')`;

interface RawRow {
  id: string;
  workflow_name: string;
  source: 'declared' | 'runtime';
  cron: string;
  time_zone: string;
  input: unknown;
  catch_up: string;
  catch_up_window_ms: number;
  overlap: string;
  jitter_ms: number;
  paused: boolean;
  next_fire_at: unknown;
  buffered_slot: unknown;
  last_run_id: string | null;
  last_slot_at: unknown;
  last_fired_at: unknown;
  revision: number;
  created_at: unknown;
  updated_at: unknown;
  last_run_status: RunStatus | null;
}

const toRow = (r: RawRow): ScheduleRow => ({
  id: r.id,
  workflowName: r.workflow_name,
  source: r.source,
  cron: r.cron,
  timeZone: r.time_zone,
  input: r.input,
  catchUp: r.catch_up,
  catchUpWindowMs: Number(r.catch_up_window_ms),
  overlap: r.overlap,
  jitterMs: r.jitter_ms,
  paused: r.paused,
  nextFireAt: toDate(r.next_fire_at)!,
  bufferedSlot: toDate(r.buffered_slot),
  lastRunId: r.last_run_id,
  lastSlotAt: toDate(r.last_slot_at),
  lastFiredAt: toDate(r.last_fired_at),
  revision: r.revision,
  createdAt: toDate(r.created_at)!,
  updatedAt: toDate(r.updated_at)!,
  lastRunStatus: r.last_run_status ?? null,
});

// --- the scheduler ---------------------------------------------------------------------------

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
 * random share of the schedule's jitter (or now). One wake-up per queue with a due run.
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
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, deadline_at, app_version, schedule_id)
  SELECT x.run_id, s.workflow_name, s.queue, 'PENDING',
         jsonb_build_object('scheduleId', s.id, 'scheduledAt', ${dateJson('x.slot')}, 'manual', x.manual)
           || CASE WHEN s.input IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('input', s.input) END,
         s.priority, greatest(now(), x.slot + floor(random() * (s.jitter_ms + 1)) * interval '1 millisecond'),
         now() + s.timeout_ms * interval '1 millisecond', $2, s.id
  FROM s CROSS JOIN LATERAL (
    SELECT (e.c->>'slot')::timestamptz AS slot, e.c->>'runId' AS run_id, (e.c->>'manual')::boolean AS manual
    FROM jsonb_array_elements(s.cands) WITH ORDINALITY AS e(c, ord)
    WHERE ${fate('s.overlap', 's.busy', '(e.ord - 1)')} = 'run') x
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

/** A due schedule as the scheduler reads it. */
export interface DueSchedule {
  id: string;
  workflowName: string;
  cron: string;
  timeZone: string;
  catchUp: string;
  catchUpWindowMs: number;
  overlap: string;
  revision: number;
  nextFireAt: number;
  bufferedSlot: number | null;
}

export interface DuePage {
  dbNow: number;
  /** Earliest next fire of the active schedules of these workflows (null: none). */
  earliest: number | null;
  rows: DueSchedule[];
}

/** One page of due schedules (see SELECT_DUE_SCHEDULES). */
export async function selectDueSchedules(
  store: Store,
  workflows: string[],
  lookaheadMs: number,
  limit: number,
  after: { nextFireAt: number; id: string } | null,
): Promise<DuePage> {
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
    after === null,
  ]);
  const first = rows[0];
  return {
    dbNow: toDate(first.db_now)!.getTime(),
    earliest: toDate(first.earliest)?.getTime() ?? null,
    rows: rows
      .filter((r) => r.id !== null)
      .map((r) => ({
        id: r.id!,
        workflowName: r.workflow_name,
        cron: r.cron,
        timeZone: r.time_zone,
        catchUp: r.catch_up,
        catchUpWindowMs: Number(r.catch_up_window_ms),
        overlap: r.overlap,
        revision: r.revision,
        nextFireAt: toDate(r.next_fire_at)!.getTime(),
        bufferedSlot: toDate(r.buffered_slot)?.getTime() ?? null,
      })),
  };
}

/** What to fire for one schedule: computed from the row at `revision`. */
export interface FirePlan {
  id: string;
  revision: number;
  /** The next fire to store. */
  nextFireAt: number;
  /** When the statement may apply (the latest candidate slot, or the read's now). */
  fireAt: number;
  queue: string;
  priority: number;
  timeoutMs: number | null;
  /** In order; the first may be the buffered slot. */
  candidates: Array<{ slot: number; runId: string; manual: boolean }>;
}

export type SlotFate = 'run' | 'buffer' | 'skip';

/** Per schedule advanced: the fate of each candidate (by run id). Schedules absent were not advanced. */
export type FireResult = Map<string, Array<{ runId: string; fate: SlotFate }>>;

/** Fires plans in one statement (see FIRE_SCHEDULES). */
export async function fireSchedules(store: Store, plans: FirePlan[], appVersion: string | null): Promise<FireResult> {
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

// --- the client API -------------------------------------------------------------------------

/** The database clock. */
const SELECT_DB_NOW = statement('select_db_now', `SELECT now() AS db_now`);

/** One schedule with its last run's status, and the database clock. $1 id. */
const SELECT_SCHEDULE = statement('select_schedule', `SELECT ${COLUMNS}, now() AS db_now FROM durable_schedules s WHERE s.id = $1`);

/**
 * Schedules by id (keyset: after $1), optionally of one workflow ($2) and paused or not ($3), at
 * most $4. Index: the primary key, or durable_schedules_workflow_idx.
 */
const LIST_SCHEDULES = statement(
  'list_schedules',
  `
SELECT ${COLUMNS} FROM durable_schedules s
WHERE s.id > $1 AND ($2::text IS NULL OR s.workflow_name = $2) AND ($3::boolean IS NULL OR s.paused = $3)
ORDER BY s.id LIMIT $4`,
);

/** Schedules the boot-time sync compares: these ids ($1), and the declared ones of these workflows ($2). */
const SELECT_SYNC_SCHEDULES = statement(
  'select_sync_schedules',
  `SELECT ${COLUMNS} FROM durable_schedules s WHERE s.id = ANY($1::text[]) OR (s.source = 'declared' AND s.workflow_name = ANY($2::text[]))`,
);

const SCHEDULE_VALUES = `workflow_name, source, cron, time_zone, input, catch_up, catch_up_window_ms, overlap, jitter_ms, paused, next_fire_at`;

/** A new schedule; nothing when the id exists. $1 id, then SCHEDULE_VALUES in order ($2 … $12). */
const INSERT_SCHEDULE = statement(
  'insert_schedule',
  `
INSERT INTO durable_schedules (id, ${SCHEDULE_VALUES})
VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11, $12)
ON CONFLICT (id) DO NOTHING RETURNING id`,
);

/** Replaces a schedule's definition if it is still at revision $2 ($1 id; SCHEDULE_VALUES as $3 … $13). */
const UPDATE_SCHEDULE = statement(
  'update_schedule',
  `
UPDATE durable_schedules
SET workflow_name = $3, source = $4, cron = $5, time_zone = $6, input = $7::jsonb, catch_up = $8, catch_up_window_ms = $9,
    overlap = $10, jitter_ms = $11, paused = $12, next_fire_at = $13, revision = revision + 1, updated_at = now()
WHERE id = $1 AND revision = $2 RETURNING id`,
);

/** Pauses a schedule (its next fire stays as it is; resume recomputes it). $1 id. */
const PAUSE_SCHEDULE = statement(
  'pause_schedule',
  `UPDATE durable_schedules SET paused = true, revision = revision + 1, updated_at = now() WHERE id = $1 RETURNING id`,
);

/** Deletes a schedule ($1); with $2 (a revision) only if still at it. Its runs stay. */
const DELETE_SCHEDULE = statement(
  'delete_schedule',
  `DELETE FROM durable_schedules WHERE id = $1 AND ($2::int IS NULL OR revision = $2) RETURNING id`,
);

/** The latest runs of a schedule ($1), at most $2. Index: durable_runs_schedule_idx. */
const SELECT_SCHEDULE_RUNS = statement(
  'select_schedule_runs',
  `
SELECT id, status, input->'scheduledAt'->>'v' AS scheduled_at, (input->>'manual')::boolean AS manual, created_at, started_at, finished_at
FROM durable_runs WHERE schedule_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`,
);

/** A schedule definition to write (input as codec JSON text or null). */
export interface ScheduleValues {
  workflowName: string;
  source: 'declared' | 'runtime';
  cron: string;
  timeZone: string;
  input: string | null;
  catchUp: string;
  catchUpWindowMs: number;
  overlap: string;
  jitterMs: number;
  paused: boolean;
  nextFireAt: Date;
}

const values = (v: ScheduleValues) => [
  v.workflowName,
  v.source,
  v.cron,
  v.timeZone,
  v.input,
  v.catchUp,
  v.catchUpWindowMs,
  v.overlap,
  v.jitterMs,
  v.paused,
  v.nextFireAt.toISOString(),
];

export async function dbNow(store: Store): Promise<number> {
  const [row] = await store.sql.query<{ db_now: unknown }>(SELECT_DB_NOW);
  return toDate(row.db_now)!.getTime();
}

export async function getSchedule(store: Store, id: string): Promise<{ row: ScheduleRow | null; dbNow: number | null }> {
  const [row] = await store.sql.query<RawRow & { db_now: unknown }>(SELECT_SCHEDULE, [id]);
  return row ? { row: toRow(row), dbNow: toDate(row.db_now)!.getTime() } : { row: null, dbNow: null };
}

export async function listSchedules(
  store: Store,
  q: { after: string; workflow: string | null; paused: boolean | null; limit: number },
): Promise<ScheduleRow[]> {
  return (await store.sql.query<RawRow>(LIST_SCHEDULES, [q.after, q.workflow, q.paused, q.limit])).map(toRow);
}

export async function selectSyncSchedules(store: Store, ids: string[], workflows: string[]): Promise<ScheduleRow[]> {
  return (await store.sql.query<RawRow>(SELECT_SYNC_SCHEDULES, [ids, workflows])).map(toRow);
}

/** Inserts a schedule; false when the id exists. */
export async function insertSchedule(store: Store, id: string, v: ScheduleValues): Promise<boolean> {
  return (await store.sql.query(INSERT_SCHEDULE, [id, ...values(v)])).length === 1;
}

/** Writes a schedule's definition if still at `revision`; false otherwise (changed meanwhile, or gone). */
export async function updateSchedule(store: Store, id: string, revision: number, v: ScheduleValues): Promise<boolean> {
  return (await store.sql.query(UPDATE_SCHEDULE, [id, revision, ...values(v)])).length === 1;
}

export async function pauseSchedule(store: Store, id: string): Promise<boolean> {
  return (await store.sql.query(PAUSE_SCHEDULE, [id])).length === 1;
}

export async function deleteSchedule(store: Store, id: string, revision: number | null = null): Promise<boolean> {
  return (await store.sql.query(DELETE_SCHEDULE, [id, revision])).length === 1;
}

/** A run a schedule started. */
export interface ScheduleRunRow {
  id: string;
  status: RunStatus;
  scheduledAt: string | null;
  manual: boolean;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export async function scheduleRuns(store: Store, id: string, limit: number): Promise<ScheduleRunRow[]> {
  const rows = await store.sql.query<{
    id: string;
    status: RunStatus;
    scheduled_at: string | null;
    manual: boolean | null;
    created_at: unknown;
    started_at: unknown;
    finished_at: unknown;
  }>(SELECT_SCHEDULE_RUNS, [id, limit]);
  return rows.map((r) => ({
    id: r.id,
    status: r.status,
    scheduledAt: r.scheduled_at,
    manual: r.manual === true,
    createdAt: toDate(r.created_at)!,
    startedAt: toDate(r.started_at),
    finishedAt: toDate(r.finished_at),
  }));
}
