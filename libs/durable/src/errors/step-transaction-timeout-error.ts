import { DurableError } from './durable-error.js';

/** A transactional step's Prisma transaction timed out (P2028). */
export class StepTransactionTimeoutError extends DurableError {
  constructor(
    readonly step: string,
    detail: string,
  ) {
    super(
      'STEP_TRANSACTION_TIMEOUT',
      `Transactional step "${step}" exceeded its Prisma transaction limits (${detail}). Raise ` +
        `@Step({ transactional: true, transaction: { timeout, maxWait } }) or make the step shorter.`,
    );
  }
}
