import type { CatchUpPolicy, OverlapPolicy, SchedulePolicy } from '../definitions/schedule.js';
import type { RunStatus } from '../store/rows.js';

/** A schedule created at runtime (e.g. one per tenant): `client.schedules.create({ id, workflow, cron, … })`. */
export interface ScheduleDefinition extends SchedulePolicy {
  /** Unique; at most 200 characters. The runs' ids are `sched:<id>:<slot ISO>`. */
  id: string;
  /** The workflow each slot starts (registered in the instances that run the scheduler). */
  workflow: string;
  /** 5 fields (minute first) or 6 (seconds first), presets (@daily), names (MON): what @Cron() accepts. */
  cron: string;
  /** Passed to every run as `input` (next to scheduleId and scheduledAt). */
  input?: unknown;
  /** Create it paused. Default false. */
  paused?: boolean;
}

/** What update() may change (anything but the id). */
export type ScheduleChanges = Partial<Omit<ScheduleDefinition, 'id' | 'paused'>>;

/** A schedule as the API returns it. */
export interface ScheduleView {
  id: string;
  workflowName: string;
  /** declared: on a workflow in code (synced at boot); runtime: created through the API. */
  source: 'declared' | 'runtime';
  cron: string;
  timeZone: string;
  input: unknown;
  catchUp: CatchUpPolicy;
  catchUpWindowMs: number;
  overlap: OverlapPolicy;
  jitterMs: number;
  paused: boolean;
  /** The next slot (while paused: the one it had; resume() computes a new one). */
  nextFireAt: Date;
  /** overlap bufferOne: the slot waiting for the active run to end. */
  bufferedSlot: Date | null;
  /** The run of the latest slot started, its status (null once deleted by retention) and its slot. */
  lastRunId: string | null;
  lastRunStatus: RunStatus | null;
  lastSlotAt: Date | null;
  /** When the latest run was started (database clock). */
  lastFiredAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What trigger() did: started the run, buffered it behind the active run, or skipped it (overlap policy). */
export interface TriggerResult {
  runId: string;
  outcome: 'started' | 'buffered' | 'skipped';
}

/** A run a schedule started (newest first). */
export type { ScheduleRunRow as ScheduleRun } from '../store/schedules.js';

/** Options of list(). */
export interface ListSchedulesOptions {
  /** Only schedules of this workflow. */
  workflow?: string;
  /** Only paused (true) or active (false) schedules. */
  paused?: boolean;
  /** Schedules whose id sorts after this one (keyset pagination: pass the last id of a page). */
  after?: string;
  /** 1 … 500, default 100. */
  limit?: number;
}
