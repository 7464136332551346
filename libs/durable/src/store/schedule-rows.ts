/** A schedule row (durable_schedules) as the store reads it, and the columns every schedule query selects. */
import { toDate } from './store.js';
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
  /** A declared schedule: the app versions that declared it, oldest first (the last one owns it). */
  declaredVersions: string[];
  /** Status of lastRunId (null when it does not exist any more). */
  lastRunStatus: RunStatus | null;
}

export const COLUMNS = `s.id, s.workflow_name, s.source, s.cron, s.time_zone, s.input, s.catch_up, s.catch_up_window_ms::float8 AS catch_up_window_ms,
  s.overlap, s.jitter_ms, s.paused, s.next_fire_at, s.buffered_slot, s.last_run_id, s.last_slot_at, s.last_fired_at, s.revision,
  s.created_at, s.updated_at, coalesce(s.declared_versions, '{}') AS declared_versions, (SELECT r.status FROM durable_runs r WHERE r.id = s.last_run_id) AS last_run_status`;

export const ACTIVE = `('PENDING','RUNNING','WAITING')`;

export interface RawRow {
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
  declared_versions: string[];
}

export const toRow = (r: RawRow): ScheduleRow => ({
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
  declaredVersions: r.declared_versions ?? [],
});

// --- the scheduler's read and fire (schedule-firing.ts and its MySQL twin) ----------------------

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

/** A row of the due read (either dialect) as the scheduler takes it. */
export const dueScheduleOf = (r: Record<string, unknown>): DueSchedule => ({
  id: r.id as string,
  workflowName: r.workflow_name as string,
  cron: r.cron as string,
  timeZone: r.time_zone as string,
  catchUp: r.catch_up as string,
  catchUpWindowMs: Number(r.catch_up_window_ms),
  overlap: r.overlap as string,
  revision: Number(r.revision),
  nextFireAt: toDate(r.next_fire_at)!.getTime(),
  bufferedSlot: toDate(r.buffered_slot)?.getTime() ?? null,
});

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

/**
 * The fate of candidate `ord` (0-based) under the overlap policy, given whether the schedule's last
 * run is still active: "skip": only the first, and only when idle; "bufferOne": the first runs when
 * idle, the next one waits (when busy the first waits); "allow": all run.
 */
export function fateOf(overlap: string, busy: boolean, ord: number): SlotFate {
  if (overlap === 'allow' || (!busy && ord === 0)) return 'run';
  if (overlap === 'bufferOne' && ((busy && ord === 0) || (!busy && ord === 1))) return 'buffer';
  return 'skip';
}

/** A planned schedule as the fire locks it (PostgreSQL in distributed mode, MySQL). */
export interface LockedSchedule {
  id: string;
  workflow_name: string;
  overlap: string;
  input: unknown;
  jitter_ms: number;
  revision: number;
  last_run_id: string | null;
  due_by: unknown;
}

/** The plans a fire applies: their schedule locked, still at the revision read, its latest slot come by the database clock (`dueBy`, ms). */
export function appliedPlans(plans: FirePlan[], locked: Map<string, LockedSchedule>, dueBy: (l: LockedSchedule) => number): FirePlan[] {
  return plans.filter((p) => {
    const l = locked.get(p.id);
    return l !== undefined && Number(l.revision) === p.revision && p.fireAt <= dueBy(l);
  });
}

/**
 * What a fire does with a plan, given the overlap policy and whether the schedule's last run is active:
 * each candidate's fate, the candidate recorded as the schedule's last run (the last one with
 * 'allow', else the first one when idle) and the slot that waits (bufferOne).
 */
export function fireOutcome(p: FirePlan, overlap: string, busy: boolean) {
  return {
    fates: p.candidates.map((c, ord) => ({ c, fate: fateOf(overlap, busy, ord) })),
    last: overlap === 'allow' ? p.candidates[p.candidates.length - 1] : busy ? undefined : p.candidates[0],
    bufferedSlot: overlap === 'bufferOne' ? p.candidates[busy ? 0 : 1]?.slot : undefined,
  };
}

/** Per schedule advanced: the fate of each candidate (by run id). Schedules absent were not advanced. */
export type FireResult = Map<string, Array<{ runId: string; fate: SlotFate }>>;

// --- the client API's writes and reads (schedules.ts and its MySQL twin) ---------------------------

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
  /** A declared schedule: the app versions that declared it, oldest first; undefined keeps them (an update) or none (an insert). */
  declaredVersions?: string[];
}

/** A run a schedule started. */
export interface ScheduleRunRow {
  id: string;
  status: RunStatus;
  /** The slot it ran for (ISO), or null. */
  scheduledAt: string | null;
  /** Started by trigger(), not by a slot. */
  manual: boolean;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}
