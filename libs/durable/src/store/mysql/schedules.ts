/**
 * Schedules (durable_schedules) on a MySQL-family database: the client API's reads and writes (see
 * schedules.ts). Every write bumps `revision`; a write computed from a read applies only if the row
 * is still at the revision read. No RETURNING: a write says whether it applied by its affected rows.
 */
import type { RunStatus } from '../rows.js';
import type { ScheduleRow } from '../schedule-rows.js';
import type { ScheduleRunRow, ScheduleValues } from '../schedule-rows.js';
import type { Store } from '../store.js';
import { bool, date, isDuplicateKey, json, marks, NOW, utc } from './sql.js';

/** The columns every schedule read selects (as COLUMNS of schedule-rows.ts), with its last run's status. */
export const MYSQL_SCHEDULE_COLUMNS = `s.id, s.workflow_name, s.source, s.cron, s.time_zone, s.input, s.catch_up, s.catch_up_window_ms,
  s.overlap, s.jitter_ms, s.paused, s.next_fire_at, s.buffered_slot, s.last_run_id, s.last_slot_at, s.last_fired_at, s.revision,
  s.created_at, s.updated_at, s.declared_versions, (SELECT r.status FROM durable_runs r WHERE r.id = s.last_run_id) AS last_run_status`;

export const toScheduleRow = (r: Record<string, unknown>): ScheduleRow => ({
  id: r.id as string,
  workflowName: r.workflow_name as string,
  source: r.source as ScheduleRow['source'],
  cron: r.cron as string,
  timeZone: r.time_zone as string,
  input: json(r.input),
  catchUp: r.catch_up as string,
  catchUpWindowMs: Number(r.catch_up_window_ms),
  overlap: r.overlap as string,
  jitterMs: Number(r.jitter_ms),
  paused: bool(r.paused),
  nextFireAt: date(r.next_fire_at)!,
  bufferedSlot: date(r.buffered_slot),
  lastRunId: (r.last_run_id as string | null) ?? null,
  lastSlotAt: date(r.last_slot_at),
  lastFiredAt: date(r.last_fired_at),
  revision: Number(r.revision),
  createdAt: date(r.created_at)!,
  updatedAt: date(r.updated_at)!,
  lastRunStatus: (r.last_run_status as RunStatus | null) ?? null,
  declaredVersions: json<string[]>(r.declared_versions) ?? [],
});

/** The definition's values, in SCHEDULE_SET order. */
const definition = (v: ScheduleValues) => [
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
  utc(v.nextFireAt),
];
const SCHEDULE_SET = `workflow_name = ?, source = ?, cron = ?, time_zone = ?, input = ?, catch_up = ?, catch_up_window_ms = ?,
  overlap = ?, jitter_ms = ?, paused = ?, next_fire_at = ?`;

/** The database clock in ms. */
export async function dbNow(store: Store): Promise<number> {
  const [row] = await store.sql.query<{ now: unknown }>(`SELECT ${NOW} AS now`);
  return date(row.now)!.getTime();
}

export async function getSchedule(store: Store, id: string): Promise<{ row: ScheduleRow | null; dbNow: number | null }> {
  const [row] = await store.sql.query<Record<string, unknown>>(
    `SELECT ${MYSQL_SCHEDULE_COLUMNS}, ${NOW} AS db_now FROM durable_schedules s WHERE s.id = ?`,
    [id],
  );
  return row ? { row: toScheduleRow(row), dbNow: date(row.db_now)!.getTime() } : { row: null, dbNow: null };
}

/** Schedules by id after the keyset, optionally of one workflow and paused or not. Index: the primary key, or durable_schedules_workflow_idx. */
export async function listSchedules(
  store: Store,
  q: { after: string; workflow: string | null; paused: boolean | null; limit: number },
): Promise<ScheduleRow[]> {
  const where = ['s.id > ?'];
  const params: unknown[] = [q.after];
  if (q.workflow !== null) {
    where.push('s.workflow_name = ?');
    params.push(q.workflow);
  }
  if (q.paused !== null) {
    where.push('s.paused = ?');
    params.push(q.paused);
  }
  const rows = await store.sql.query<Record<string, unknown>>(
    `SELECT ${MYSQL_SCHEDULE_COLUMNS} FROM durable_schedules s WHERE ${where.join(' AND ')} ORDER BY s.id LIMIT ?`,
    [...params, q.limit],
  );
  return rows.map(toScheduleRow);
}

/** Schedules the boot-time sync compares: these ids, and the declared ones of these workflows. */
export async function selectSyncSchedules(store: Store, ids: string[], workflows: string[]): Promise<ScheduleRow[]> {
  if (!ids.length && !workflows.length) return [];
  const rows = await store.sql.query<Record<string, unknown>>(
    `SELECT ${MYSQL_SCHEDULE_COLUMNS} FROM durable_schedules s
     WHERE s.id IN (${ids.length ? marks(ids.length) : 'NULL'}) OR (s.source = 'declared' AND s.workflow_name IN (${workflows.length ? marks(workflows.length) : 'NULL'}))`,
    [...ids, ...workflows],
  );
  return rows.map(toScheduleRow);
}

/** Inserts a schedule; false when the id exists. */
export async function insertSchedule(store: Store, id: string, v: ScheduleValues): Promise<boolean> {
  try {
    await store.sql.execute(
      `INSERT INTO durable_schedules (id, workflow_name, source, cron, time_zone, input, catch_up, catch_up_window_ms, overlap, jitter_ms,
                                      paused, next_fire_at, declared_versions, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${NOW}, ${NOW})`,
      [id, ...definition(v), JSON.stringify(v.declaredVersions ?? [])],
    );
    return true;
  } catch (err) {
    if (isDuplicateKey(err)) return false;
    throw err;
  }
}

/** Writes a schedule's definition if still at `revision`; false otherwise (changed meanwhile, or gone). */
export async function updateSchedule(store: Store, id: string, revision: number, v: ScheduleValues): Promise<boolean> {
  const versions = v.declaredVersions === undefined ? null : JSON.stringify(v.declaredVersions);
  const n = await store.sql.execute(
    `UPDATE durable_schedules SET ${SCHEDULE_SET}, declared_versions = coalesce(?, declared_versions),
       revision = revision + 1, updated_at = ${NOW}
     WHERE id = ? AND revision = ?`,
    [...definition(v), versions, id, revision],
  );
  return n === 1;
}

export async function pauseSchedule(store: Store, id: string): Promise<boolean> {
  const n = await store.sql.execute(
    `UPDATE durable_schedules SET paused = TRUE, revision = revision + 1, updated_at = ${NOW} WHERE id = ?`,
    [id],
  );
  return n === 1;
}

export async function deleteSchedule(store: Store, id: string, revision: number | null): Promise<boolean> {
  const n = await store.sql.execute(
    `DELETE FROM durable_schedules WHERE id = ?${revision === null ? '' : ' AND revision = ?'}`,
    revision === null ? [id] : [id, revision],
  );
  return n === 1;
}

/** The latest runs of a schedule. Index: durable_runs_schedule_idx. */
export async function scheduleRuns(store: Store, id: string, limit: number): Promise<ScheduleRunRow[]> {
  const rows = await store.sql.query<Record<string, unknown>>(
    `SELECT id, status, JSON_UNQUOTE(JSON_EXTRACT(input, '$.scheduledAt.v')) AS scheduled_at,
            JSON_EXTRACT(input, '$.manual') AS manual, created_at, started_at, finished_at
     FROM durable_runs WHERE schedule_id = ? ORDER BY created_at DESC, id DESC LIMIT ?`,
    [id, limit],
  );
  return rows.map((r) => ({
    id: r.id as string,
    status: r.status as RunStatus,
    scheduledAt: (r.scheduled_at as string | null) ?? null,
    manual: r.manual === 'true' || r.manual === true || bool(r.manual),
    createdAt: date(r.created_at)!,
    startedAt: date(r.started_at),
    finishedAt: date(r.finished_at),
  }));
}
