import { DurableError } from './durable-error.js';

/**
 * A schedule operation that contradicts what exists: creating an id that exists with another
 * definition, changing a schedule declared in code through the API, a declared schedule whose id
 * is taken by a runtime one, or a schedule changed concurrently too often to apply the change.
 */
export class ScheduleConflictError extends DurableError {
  constructor(
    readonly scheduleId: string,
    message: string,
  ) {
    super('SCHEDULE_CONFLICT', message);
  }
}
