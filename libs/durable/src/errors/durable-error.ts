/** Every code a DurableError can have: branch on `err.code`, or on the class with instanceof. */
export type DurableErrorCode =
  | 'UNKNOWN_WORKFLOW'
  | 'DUPLICATE_WORKFLOW'
  | 'INVALID_DEFINITION'
  | 'INVALID_OPTIONS'
  | 'INVALID_ARGUMENT'
  | 'SERIALIZATION'
  | 'PAYLOAD_TOO_LARGE'
  | 'NON_DETERMINISTIC'
  | 'IDEMPOTENCY_CONFLICT'
  | 'RUN_NOT_FOUND'
  | 'ILLEGAL_TRANSITION'
  | 'WORKFLOW_FAILED'
  | 'WORKFLOW_CANCELLED'
  | 'RESULT_TIMEOUT'
  | 'SCHEMA_MISSING'
  | 'SCHEMA_OUTDATED'
  | 'SCHEMA_TOO_NEW'
  | 'STEP_TRANSACTION_TIMEOUT'
  | 'NOT_IN_WORKFLOW'
  | 'NOT_READY'
  | 'TOO_MANY_RECOVERIES'
  | 'STEP_TIMEOUT'
  | 'COMPENSATION_FAILED'
  | 'INVALID_SCHEDULE'
  | 'SCHEDULE_NOT_FOUND'
  | 'SCHEDULE_CONFLICT'
  | 'DEADLINE_EXCEEDED'
  | 'STEP_SEQUENCE_MISMATCH'
  | 'TEST_WAIT_TIMEOUT'
  | 'KEY_CONFLICT'
  | 'PIVOT_PASSED'
  | 'UNDONE_STEPS'
  | 'NO_PRIMARY'
  | 'UNSUPPORTED_DATABASE'
  | 'CALLBACK_REFUSED'
  | 'CALLBACK_TIMEOUT'
  | 'SIGNAL_NOT_TAKEN';

/**
 * Every error the library throws on purpose is a subclass of DurableError, one class per code:
 * a stable `code` to branch on and a message that says what to do about it.
 */
export class DurableError extends Error {
  protected constructor(
    readonly code: DurableErrorCode,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}
