import { DurableError } from './durable-error.js';

/**
 * A schedule the engine cannot use: a cron expression or time zone the cron library rejects, an
 * expression that never fires, a policy value out of range. Declared on a workflow it is thrown at
 * boot (naming the workflow); given to the schedules API it is a 400 in the admin API.
 */
export class InvalidScheduleError extends DurableError {
  constructor(
    /** Where the schedule comes from: `workflow "nightly" (Jobs.nightly())` or `schedule "tenant-1"`. */
    readonly where: string,
    /** The option at fault: cron, timeZone, catchUp, overlap, … */
    readonly field: string,
    /** The value given, as text. */
    readonly value: string,
    problem: string,
  ) {
    super('INVALID_SCHEDULE', `Invalid schedule of ${where}: ${field} ${value} ${problem}.`);
  }
}
