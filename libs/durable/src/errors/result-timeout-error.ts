import { DurableError } from './durable-error.js';

/** `WorkflowHandle.result({ timeoutMs })` gave up waiting; the run itself goes on. */
export class ResultTimeoutError extends DurableError {
  constructor(
    readonly runId: string,
    readonly timeoutMs: number,
    readonly status: string,
  ) {
    super(
      'RESULT_TIMEOUT',
      `Run ${runId} did not finish within ${timeoutMs} ms (status ${status}); the run continues — call result() again later.`,
    );
  }
}
