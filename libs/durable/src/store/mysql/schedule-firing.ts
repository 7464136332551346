/**
 * The scheduler's statements on a MySQL-family database (see schedule-firing.ts): the read of due
 * schedules, one statement, and the fire, one short transaction per batch of plans:
 * 1. lock the planned schedules FOR UPDATE SKIP LOCKED (another instance firing one right now keeps
 *    it) with the database clock; a plan applies only if its schedule is still at the revision read
 *    and its latest slot has come (fireAt, by that clock);
 * 2. whether each one's last run is still active (overlap), then each candidate's fate (`fateOf`,
 *    the same rules as the PostgreSQL statement);
 * 3. the runs of the candidates that run, one INSERT each: a slot's run id exists once (primary key),
 *    so a duplicate means the slot has its run already and is passed over;
 * 4. the schedules advanced (next fire, revision + 1, last run, buffered slot), their history, and a
 *    wake-up hint for the queues with a due run.
 */
import {
  appliedPlans,
  dueScheduleOf,
  fireOutcome,
  type DuePage,
  type FirePlan,
  type FireResult,
  type LockedSchedule,
} from '../schedule-rows.js';
import type { Store } from '../store.js';
import { wakeQueues } from './checkpoints.js';
import { date, DUE_BY, insertHistory, isDuplicateKey, json, marks, NOW, utc } from './sql.js';

const ACTIVE = `('PENDING', 'RUNNING', 'WAITING')`;
const DUE_COLUMNS = `id, workflow_name, cron, time_zone, catch_up, catch_up_window_ms, overlap, revision, next_fire_at, buffered_slot`;

/**
 * One page of due schedules in one statement: a first row with the database clock and the earliest
 * next fire (id null), the due schedules after the keyset (index durable_schedules_due_idx: paused,
 * next_fire_at, id), and on the first page the schedules whose buffered slot can start (their active
 * run ended). No locks: the fire checks the revision.
 */
export async function selectDueSchedules(
  store: Store,
  workflows: string[],
  lookaheadMs: number,
  limit: number,
  after: { nextFireAt: number; id: string } | null,
): Promise<DuePage> {
  const names = marks(workflows.length);
  const horizon = `(${NOW} + INTERVAL ROUND(? * 1000) MICROSECOND)`;
  const keyset = after ? ' AND (next_fire_at > ? OR (next_fire_at = ? AND id > ?))' : '';
  const buffered = after
    ? ''
    : `
UNION ALL (SELECT s.${DUE_COLUMNS.replaceAll(', ', ', s.')}, NULL, NULL FROM durable_schedules s
  WHERE s.buffered_slot IS NOT NULL AND s.paused = FALSE AND s.workflow_name IN (${names}) AND s.next_fire_at > ${horizon}
    AND NOT EXISTS (SELECT 1 FROM durable_runs r WHERE r.id = s.last_run_id AND r.status IN ${ACTIVE})
  LIMIT ?)`;
  const rows = await store.sql.query<Record<string, unknown>>(
    `(SELECT NULL AS id, NULL AS workflow_name, NULL AS cron, NULL AS time_zone, NULL AS catch_up, NULL AS catch_up_window_ms,
        NULL AS overlap, NULL AS revision, NULL AS next_fire_at, NULL AS buffered_slot, ${NOW} AS db_now,
        (SELECT min(next_fire_at) FROM durable_schedules WHERE paused = FALSE AND workflow_name IN (${names})) AS earliest)
UNION ALL (SELECT ${DUE_COLUMNS}, NULL, NULL FROM durable_schedules
  WHERE paused = FALSE AND next_fire_at <= ${horizon} AND workflow_name IN (${names})${keyset}
  ORDER BY next_fire_at, id LIMIT ?)${buffered}`,
    [
      ...workflows,
      lookaheadMs,
      ...workflows,
      ...(after ? [utc(new Date(after.nextFireAt)), utc(new Date(after.nextFireAt)), after.id] : []),
      limit,
      ...(after ? [] : [...workflows, lookaheadMs, limit]),
    ],
  );
  const meta = rows.find((r) => r.id == null)!;
  return {
    dbNow: date(meta.db_now)!.getTime(),
    earliest: date(meta.earliest)?.getTime() ?? null,
    rows: rows.filter((r) => r.id != null).map(dueScheduleOf),
  };
}

/** Fires plans in one transaction (see the file's comment); returns the fates of the schedules advanced. */
export async function fireSchedules(store: Store, plans: FirePlan[], appVersion: string | null): Promise<FireResult> {
  const out: FireResult = new Map();
  if (!plans.length) return out;
  return store.sql.transaction(async (sql) => {
    const locked = await sql.query<LockedSchedule>(
      `SELECT id, workflow_name, overlap, input, jitter_ms, revision, last_run_id, ${DUE_BY} AS due_by FROM durable_schedules
       WHERE id IN (${marks(plans.length)}) FOR UPDATE SKIP LOCKED`,
      plans.map((p) => p.id),
    );
    const byId = new Map(locked.map((l) => [l.id, l]));
    const applied = appliedPlans(plans, byId, (l) => date(l.due_by)!.getTime());
    if (!applied.length) return out;
    const lastRuns = applied.map((p) => byId.get(p.id)!).filter((l) => l.overlap !== 'allow' && l.last_run_id);
    const active = new Set(
      lastRuns.length
        ? (
            await sql.query<{ id: string }>(
              `SELECT id FROM durable_runs WHERE id IN (${marks(lastRuns.length)}) AND status IN ${ACTIVE}`,
              lastRuns.map((l) => l.last_run_id),
            )
          ).map((r) => r.id)
        : [],
    );
    const created: Array<{ id: string; workflow: string; queue: string; schedule: string; due: boolean }> = [];
    for (const p of applied) {
      const s = byId.get(p.id)!;
      const busy = s.overlap !== 'allow' && !!s.last_run_id && active.has(s.last_run_id);
      const { fates, last, bufferedSlot } = fireOutcome(p, s.overlap, busy);
      const input = json(s.input);
      for (const { c, fate } of fates) {
        if (fate !== 'run') continue;
        const jitter = Math.floor(Math.random() * (Number(s.jitter_ms) + 1));
        const dueAt = `GREATEST(${NOW}, CAST(? AS DATETIME(3)) + INTERVAL ? MICROSECOND)`;
        const runInput = {
          scheduleId: s.id,
          scheduledAt: { $durable: 'Date', v: new Date(c.slot).toISOString() },
          manual: c.manual,
          ...(input === null ? {} : { input }),
        };
        try {
          await sql.execute(
            `INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, app_version,
                                       schedule_id, created_at, updated_at)
             VALUES (?, ?, ?, 'PENDING', ?, ?, ${dueAt}, ${dueAt}, ${p.timeoutMs == null ? 'NULL' : `${NOW} + INTERVAL ROUND(? * 1000) MICROSECOND`},
                     ?, ?, ${NOW}, ${NOW})`,
            [
              c.runId,
              s.workflow_name,
              p.queue,
              JSON.stringify(runInput),
              p.priority,
              utc(new Date(c.slot)),
              jitter * 1000,
              utc(new Date(c.slot)),
              jitter * 1000,
              ...(p.timeoutMs == null ? [] : [p.timeoutMs]),
              appVersion,
              s.id,
            ],
          );
          const due = c.slot + jitter <= date(s.due_by)!.getTime();
          created.push({ id: c.runId, workflow: s.workflow_name, queue: p.queue, schedule: s.id, due });
        } catch (err) {
          if (!isDuplicateKey(err)) throw err; // the slot has its run already
        }
      }
      await sql.execute(
        `UPDATE durable_schedules
         SET next_fire_at = ?, revision = revision + 1, updated_at = ${NOW},
             last_run_id = coalesce(?, last_run_id), last_slot_at = coalesce(?, last_slot_at),
             last_fired_at = ${last ? NOW : 'last_fired_at'}, buffered_slot = ?
         WHERE id = ?`,
        [
          utc(new Date(p.nextFireAt)),
          last?.runId ?? null,
          last ? utc(new Date(last.slot)) : null,
          bufferedSlot === undefined ? null : utc(new Date(bufferedSlot)),
          s.id,
        ],
      );
      out.set(
        s.id,
        fates.map(({ c, fate }) => ({ runId: c.runId, fate })),
      );
    }
    await insertHistory(
      sql,
      store.history,
      created.map((r) => [r.id, 'created', { workflow: r.workflow, queue: r.queue, schedule: r.schedule }]),
    );
    wakeQueues(
      sql,
      created.filter((r) => r.due),
    );
    return out;
  });
}
