import { DurableError } from './durable-error.js';

/** No schedule with this id. */
export class ScheduleNotFoundError extends DurableError {
  constructor(readonly scheduleId: string) {
    super('SCHEDULE_NOT_FOUND', `No schedule with id "${scheduleId}".`);
  }
}
