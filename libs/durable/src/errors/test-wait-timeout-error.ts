import { DurableError } from './durable-error.js';

/** nestjs-durable/testing: what a test waited for (a run's status or step, the work to settle) did not happen in time. */
export class TestWaitTimeoutError extends DurableError {
  constructor(message: string) {
    super('TEST_WAIT_TIMEOUT', message);
  }
}
