import { DurableError } from './durable-error.js';

/**
 * An attempt of a step ran longer than its `@Step({ timeoutMs })`: its `Durable.signal()` was
 * aborted with this error, and the attempt failed with it once the step's code settled. It is
 * retried like any error, following the step's retry policy (`retryIf` sees it).
 */
export class StepTimeoutError extends DurableError {
  constructor(
    readonly step: string,
    readonly timeoutMs: number,
    readonly attempt: number,
  ) {
    super(
      'STEP_TIMEOUT',
      `Step "${step}" timed out after ${timeoutMs} ms (attempt ${attempt}). Raise @Step({ timeoutMs }) or make the ` +
        `step pass Durable.signal() to what it waits for, so that it stops when the time is up.`,
    );
  }
}
