/**
 * Schedules in distributed mode (Citus, see partitions.ts). The schedules are a reference table and
 * each slot's run lives in the partition of its id, so the statements of schedule-firing.ts, which
 * join a schedule to its last run and insert its runs in one statement, are split here into
 * single-partition statements:
 * - a schedule's last run is looked up in its partition (the overlap policy, the status in reads);
 * - the fire is one transaction (two-phase commit when it spans nodes): lock the planned schedules
 *   FOR UPDATE SKIP LOCKED (another instance firing one right now keeps it), check each one's
 *   revision and due time by the database clock, insert the slots' runs per partition ON CONFLICT DO
 *   NOTHING (a slot's run id exists once: once per slot), then advance the schedules. The rules are
 *   those of the single-server statement (fateOf).
 */
import { runIdentities } from './runs.js';
import { statement } from './statement.js';
import { DUE_BY, history, WAKEUP_CHANNEL } from './sql-fragments.js';
import { perPartition, toDate, type Store } from './store.js';
import {
  appliedPlans,
  dueScheduleOf,
  fireOutcome,
  type DueSchedule,
  type FirePlan,
  type FireResult,
  type LockedSchedule,
  type ScheduleRow,
} from './schedule-rows.js';

const ACTIVE: ReadonlySet<string> = new Set(['PENDING', 'RUNNING', 'WAITING']);

/**
 * Schedules whose buffered slot may start once their last run has ended (the scheduler's first page,
 * as SELECT_DUE_SCHEDULES's second part), with that run's id: $1 lookahead ms, $2 workflows, $3 limit.
 */
const BUFFERED_SCHEDULES = statement(
  'select_buffered_schedules',
  `
SELECT id, workflow_name, cron, time_zone, catch_up, catch_up_window_ms::float8 AS catch_up_window_ms, overlap, revision,
       next_fire_at, buffered_slot, last_run_id
FROM durable_schedules
WHERE buffered_slot IS NOT NULL AND NOT paused AND workflow_name = ANY($2::text[])
  AND next_fire_at > now() + $1::float8 * interval '1 millisecond'
ORDER BY next_fire_at, id LIMIT $3`,
);

/** The planned schedules ($1 ids), locked; the database clock and the due-by bound with them. */
const LOCK_PLANNED = statement(
  'lock_planned_schedules',
  `
SELECT id, workflow_name, overlap, input, jitter_ms, revision, last_run_id, now() AS db_now, ${DUE_BY} AS due_by
FROM durable_schedules WHERE id = ANY($1::text[]) FOR UPDATE SKIP LOCKED`,
);

/**
 * The slots' runs of one partition (arrays, one element per run): $1 ids, $2 workflows, $3 queues,
 * $4 inputs (json text), $5 priorities, $6 due times (slot + jitter; not before now), $7 timeout ms
 * (null = none), $8 schedule ids, $9 app version, $10 history. One wake-up per queue with a due run.
 */
const INSERT_FIRED_RUNS = statement(
  'insert_fired_runs',
  `
WITH ins AS (
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, app_version, schedule_id)
  SELECT t.id, t.wf, t.q, 'PENDING', t.inp::jsonb, t.pr, greatest(now(), t.due), greatest(now(), t.due),
         now() + t.tmo * interval '1 millisecond', $9, t.sch
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[], $6::timestamptz[], $7::float8[], $8::text[])
       AS t(id, wf, q, inp, pr, due, tmo, sch)
  ON CONFLICT (id) DO NOTHING
  RETURNING id, workflow_name, queue, schedule_id, available_at),
hist AS (${history('$10', `SELECT id, 'created', jsonb_build_object('workflow', workflow_name, 'queue', queue, 'schedule', schedule_id) FROM ins WHERE true`)}),
woken AS (SELECT count(pg_notify('${WAKEUP_CHANNEL}', q.queue)) AS n FROM (SELECT DISTINCT queue FROM ins WHERE available_at <= ${DUE_BY}) q)
SELECT ins.id FROM ins CROSS JOIN woken`,
);

/**
 * Advances schedules ($1, a jsonb array of { id, next, run, slot, fired, buffered }): every value comes
 * from the fire (the clock included), as Citus wants of an UPDATE.
 */
const ADVANCE_SCHEDULES = statement(
  'advance_schedules',
  `
UPDATE durable_schedules sc
SET next_fire_at = p.next, revision = sc.revision + 1, updated_at = p.now,
    last_run_id = coalesce(p.run, sc.last_run_id), last_slot_at = coalesce(p.slot, sc.last_slot_at),
    last_fired_at = coalesce(p.fired, sc.last_fired_at), buffered_slot = p.buffered
FROM jsonb_to_recordset($1::jsonb) AS p(id text, next timestamptz, now timestamptz, run text, slot timestamptz, fired timestamptz,
                                        buffered timestamptz)
WHERE sc.id = p.id`,
);

/** The rows with the status of their last run, read in its partition (distributed mode; unchanged on a single server). */
export async function withLastRunStatuses(store: Store, rows: ScheduleRow[]): Promise<ScheduleRow[]> {
  if (store.layout.partitions === null || !rows.length) return rows;
  const statuses = await runIdentities(
    store,
    rows.flatMap((r) => (r.lastRunId ? [r.lastRunId] : [])),
  );
  return rows.map((r) => ({ ...r, lastRunStatus: (r.lastRunId && statuses.get(r.lastRunId)?.status) || null }));
}

/** Schedules whose buffered slot can start now: their last run is not active any more. */
export async function bufferedDue(store: Store, workflows: string[], lookaheadMs: number, limit: number): Promise<DueSchedule[]> {
  const rows = await store.sql.query<Record<string, unknown> & { last_run_id: string | null }>(BUFFERED_SCHEDULES, [
    lookaheadMs,
    workflows,
    limit,
  ]);
  const statuses = await runIdentities(
    store,
    rows.flatMap((r) => (r.last_run_id ? [r.last_run_id] : [])),
  );
  return rows.filter((r) => !r.last_run_id || !ACTIVE.has(statuses.get(r.last_run_id)?.status ?? '')).map(dueScheduleOf);
}

interface FiredRun {
  id: string;
  workflow: string;
  queue: string;
  input: string;
  priority: number;
  due: string;
  timeoutMs: number | null;
  schedule: string;
}

/** Fires plans in one transaction (see the file's comment); returns the fates of the schedules advanced. */
export async function fireAcrossPartitions(store: Store, plans: FirePlan[], appVersion: string | null): Promise<FireResult> {
  const out: FireResult = new Map();
  if (!plans.length) return out;
  return store.sql.transaction(async (sql) => {
    const tx: Store = { ...store, sql };
    const locked = await sql.query<LockedSchedule & { db_now: unknown }>(LOCK_PLANNED, [plans.map((p) => p.id)]);
    const byId = new Map(locked.map((l) => [l.id, l]));
    const applied = appliedPlans(plans, byId, (l) => toDate(l.due_by)!.getTime());
    if (!applied.length) return out;
    const lastRuns = applied.map((p) => byId.get(p.id)!).filter((l) => l.overlap !== 'allow' && l.last_run_id);
    const statuses = await runIdentities(
      tx,
      lastRuns.map((l) => l.last_run_id!),
    );
    const runs: FiredRun[] = [];
    const advanced: Array<Record<string, string | null>> = [];
    const iso = (ms: number) => new Date(ms).toISOString();
    for (const p of applied) {
      const s = byId.get(p.id)!;
      const now = toDate(s.db_now)!.toISOString();
      const busy = s.overlap !== 'allow' && !!s.last_run_id && ACTIVE.has(statuses.get(s.last_run_id)?.status ?? '');
      const { fates, last, bufferedSlot } = fireOutcome(p, s.overlap, busy);
      for (const { c } of fates.filter((f) => f.fate === 'run')) {
        const input = { scheduleId: s.id, scheduledAt: { $durable: 'Date', v: iso(c.slot) }, manual: c.manual };
        runs.push({
          id: c.runId,
          workflow: s.workflow_name,
          queue: p.queue,
          input: JSON.stringify(s.input == null ? input : { ...input, input: s.input }),
          priority: p.priority,
          due: iso(c.slot + Math.floor(Math.random() * (Number(s.jitter_ms) + 1))),
          timeoutMs: p.timeoutMs,
          schedule: s.id,
        });
      }
      advanced.push({
        id: s.id,
        next: iso(p.nextFireAt),
        now,
        run: last?.runId ?? null,
        slot: last ? iso(last.slot) : null,
        fired: last ? now : null,
        buffered: bufferedSlot === undefined ? null : iso(bufferedSlot),
      });
      out.set(
        s.id,
        fates.map(({ c, fate }) => ({ runId: c.runId, fate })),
      );
    }
    await perPartition(
      tx,
      runs,
      (r) => r.id,
      (s, part) =>
        s.sql.query(INSERT_FIRED_RUNS, [
          part.map((r) => r.id),
          part.map((r) => r.workflow),
          part.map((r) => r.queue),
          part.map((r) => r.input),
          part.map((r) => r.priority),
          part.map((r) => r.due),
          part.map((r) => r.timeoutMs),
          part.map((r) => r.schedule),
          appVersion,
          store.history,
        ]),
    );
    await sql.query(ADVANCE_SCHEDULES, [JSON.stringify(advanced)]);
    return out;
  });
}
