import type { EngineContext } from './engine-context.js';
import {
  createSchedule,
  deleteSchedule,
  getScheduleView,
  listScheduleRuns,
  listScheduleViews,
  pauseSchedule,
  resumeSchedule,
  triggerSchedule,
  updateSchedule,
} from './schedules.js';
import type {
  ListSchedulesOptions,
  ScheduleChanges,
  ScheduleDefinition,
  ScheduleRun,
  ScheduleView,
  TriggerResult,
} from './schedule-types.js';

/**
 * Runtime schedules (e.g. one per tenant), stored in durable_schedules: they survive restarts and
 * fire once per slot across all instances. `engine.schedules` / `WorkflowClient.schedules`.
 * Schedules declared on workflows are listed here too, and can be paused, resumed and triggered.
 */
export class ScheduleClient {
  constructor(private readonly context: () => EngineContext) {}

  /**
   * Creates a schedule (idempotent for the same definition); see ScheduleDefinition. With
   * `requireRegistered: false` (the command line) the workflow need not be registered in this process.
   */
  create(definition: ScheduleDefinition, opts: { requireRegistered?: boolean } = {}): Promise<ScheduleView> {
    return createSchedule(this.context(), definition, opts.requireRegistered ?? true);
  }

  /** Changes a runtime schedule; a new cron or time zone starts from the first slot after now. */
  update(id: string, changes: ScheduleChanges, opts: { requireRegistered?: boolean } = {}): Promise<ScheduleView> {
    return updateSchedule(this.context(), id, changes, opts.requireRegistered ?? true);
  }

  /** Deletes a schedule (its runs stay); false if there was none. */
  delete(id: string): Promise<boolean> {
    return deleteSchedule(this.context(), id);
  }

  /** No slot fires until resume(); kept across restarts and the boot-time sync of declared schedules. */
  pause(id: string): Promise<ScheduleView> {
    return pauseSchedule(this.context(), id);
  }

  /** Resumes from the first slot after now (slots of the pause do not run). */
  resume(id: string): Promise<ScheduleView> {
    return resumeSchedule(this.context(), id);
  }

  /**
   * Starts a run now, under the schedule's overlap policy; the next fire does not move. `unregistered`
   * (the command line): the queue, priority and timeout of the run when this process does not
   * register the schedule's workflow.
   */
  trigger(
    id: string,
    opts: { unregistered?: { queue: string; priority?: number; timeoutMs?: number | null } } = {},
  ): Promise<TriggerResult> {
    return triggerSchedule(this.context(), id, opts.unregistered);
  }

  /** One schedule, or null. */
  get(id: string): Promise<ScheduleView | null> {
    return getScheduleView(this.context(), id);
  }

  /** Schedules by id, optionally of one workflow / paused or not; page with `after` (the last id). */
  list(options?: ListSchedulesOptions): Promise<ScheduleView[]> {
    return listScheduleViews(this.context(), options);
  }

  /** The latest runs the schedule started, newest first (default 20, at most 100). */
  runs(id: string, options: { limit?: number } = {}): Promise<ScheduleRun[]> {
    return listScheduleRuns(this.context(), id, options.limit);
  }
}
