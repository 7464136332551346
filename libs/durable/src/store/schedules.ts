/**
 * Schedules (durable_schedules): the client API's reads and writes. Every write bumps `revision`:
 * a write computed from a read applies only if the row is still at the revision read.
 */
import * as mysql from './mysql/schedules.js';
import { statement } from './statement.js';
import { withLastRunStatuses } from './partitioned-schedules.js';
import { eachPartition, toDate, type Store } from './store.js';
import type { RunStatus } from './rows.js';
import { COLUMNS, toRow, type RawRow, type ScheduleRow, type ScheduleRunRow, type ScheduleValues } from './schedule-rows.js';
export type { ScheduleRunRow, ScheduleValues } from './schedule-rows.js';

export type { ScheduleRow } from './schedule-rows.js';
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

/** A new schedule; nothing when the id exists. $1 id, then SCHEDULE_VALUES in order ($2 … $12), $13 the declaring versions. */
const INSERT_SCHEDULE = statement(
  'insert_schedule',
  `
INSERT INTO durable_schedules (id, ${SCHEDULE_VALUES}, declared_versions)
VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11, $12, coalesce($13::text[], '{}'))
ON CONFLICT (id) DO NOTHING RETURNING id`,
);

/**
 * Replaces a schedule's definition if it is still at revision $2 ($1 id; SCHEDULE_VALUES as $3 … $13;
 * $14 the declaring versions, null to keep them).
 */
const UPDATE_SCHEDULE = statement(
  'update_schedule',
  `
UPDATE durable_schedules
SET workflow_name = $3, source = $4, cron = $5, time_zone = $6, input = $7::jsonb, catch_up = $8, catch_up_window_ms = $9,
    overlap = $10, jitter_ms = $11, paused = $12, next_fire_at = $13, declared_versions = coalesce($14::text[], declared_versions),
    revision = revision + 1, updated_at = now()
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
  v.declaredVersions ?? null,
];

export async function dbNow(store: Store): Promise<number> {
  if (store.sql.dialect === 'mysql') return mysql.dbNow(store);
  const [row] = await store.sql.query<{ db_now: unknown }>(SELECT_DB_NOW);
  return toDate(row.db_now)!.getTime();
}

export async function getSchedule(store: Store, id: string): Promise<{ row: ScheduleRow | null; dbNow: number | null }> {
  if (store.sql.dialect === 'mysql') return mysql.getSchedule(store, id);
  const [row] = await store.sql.query<RawRow & { db_now: unknown }>(SELECT_SCHEDULE, [id]);
  return row
    ? { row: (await withLastRunStatuses(store, [toRow(row)]))[0], dbNow: toDate(row.db_now)!.getTime() }
    : { row: null, dbNow: null };
}

export async function listSchedules(
  store: Store,
  q: { after: string; workflow: string | null; paused: boolean | null; limit: number },
): Promise<ScheduleRow[]> {
  if (store.sql.dialect === 'mysql') return mysql.listSchedules(store, q);
  return withLastRunStatuses(store, (await store.sql.query<RawRow>(LIST_SCHEDULES, [q.after, q.workflow, q.paused, q.limit])).map(toRow));
}

export async function selectSyncSchedules(store: Store, ids: string[], workflows: string[]): Promise<ScheduleRow[]> {
  if (store.sql.dialect === 'mysql') return mysql.selectSyncSchedules(store, ids, workflows);
  return withLastRunStatuses(store, (await store.sql.query<RawRow>(SELECT_SYNC_SCHEDULES, [ids, workflows])).map(toRow));
}

/** Inserts a schedule; false when the id exists. */
export async function insertSchedule(store: Store, id: string, v: ScheduleValues): Promise<boolean> {
  if (store.sql.dialect === 'mysql') return mysql.insertSchedule(store, id, v);
  return (await store.sql.query(INSERT_SCHEDULE, [id, ...values(v)])).length === 1;
}

/** Writes a schedule's definition if still at `revision`; false otherwise (changed meanwhile, or gone). */
export async function updateSchedule(store: Store, id: string, revision: number, v: ScheduleValues): Promise<boolean> {
  if (store.sql.dialect === 'mysql') return mysql.updateSchedule(store, id, revision, v);
  return (await store.sql.query(UPDATE_SCHEDULE, [id, revision, ...values(v)])).length === 1;
}

export async function pauseSchedule(store: Store, id: string): Promise<boolean> {
  if (store.sql.dialect === 'mysql') return mysql.pauseSchedule(store, id);
  return (await store.sql.query(PAUSE_SCHEDULE, [id])).length === 1;
}

export async function deleteSchedule(store: Store, id: string, revision: number | null = null): Promise<boolean> {
  if (store.sql.dialect === 'mysql') return mysql.deleteSchedule(store, id, revision);
  return (await store.sql.query(DELETE_SCHEDULE, [id, revision])).length === 1;
}

export async function scheduleRuns(store: Store, id: string, limit: number): Promise<ScheduleRunRow[]> {
  if (store.sql.dialect === 'mysql') return mysql.scheduleRuns(store, id, limit);
  // Distributed mode: the latest of each partition, then the latest of those.
  const rows = (
    await eachPartition(store, (s) =>
      s.sql.query<{
        id: string;
        status: RunStatus;
        scheduled_at: string | null;
        manual: boolean | null;
        created_at: unknown;
        started_at: unknown;
        finished_at: unknown;
      }>(SELECT_SCHEDULE_RUNS, [id, limit]),
    )
  ).flat();
  if (store.layout.partitions !== null)
    rows.sort((a, b) => toDate(b.created_at)!.getTime() - toDate(a.created_at)!.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
  return rows.slice(0, limit).map((r) => ({
    id: r.id,
    status: r.status,
    scheduledAt: r.scheduled_at,
    manual: r.manual === true,
    createdAt: toDate(r.created_at)!,
    startedAt: toDate(r.started_at),
    finishedAt: toDate(r.finished_at),
  }));
}
