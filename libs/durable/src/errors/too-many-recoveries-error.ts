import { DurableError } from './durable-error.js';

/** A run was claimed more often than `maxRecoveryAttempts` without finishing: its executions keep dying. */
export class TooManyRecoveriesError extends DurableError {
  constructor(
    readonly runId: string,
    readonly attempts: number,
    limit: number,
    where: string,
  ) {
    super(
      'TOO_MANY_RECOVERIES',
      `${where} was claimed ${attempts} times without finishing (its executions kept dying); it is failed to ` +
        `protect the workers. Fix the cause, then resume it (maxRecoveryAttempts = ${limit}).`,
    );
  }
}
