import { DurableError } from './durable-error.js';

/** nestjs-durable/testing: a run's steps are not the expected ones (the message shows both, side by side). */
export class StepSequenceMismatchError extends DurableError {
  constructor(
    readonly runId: string,
    message: string,
  ) {
    super('STEP_SEQUENCE_MISMATCH', message);
  }
}
