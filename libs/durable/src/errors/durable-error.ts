/**
 * Every error the library throws on purpose is a DurableError: it has a stable `code` to
 * branch on and a message that says what to do about it.
 */
export class DurableError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** `start()` or `getRun()` named a workflow that no provider registered. */
export class UnknownWorkflowError extends DurableError {
  constructor(
    readonly workflowName: string,
    readonly known: string[],
  ) {
    super(
      'UNKNOWN_WORKFLOW',
      `No workflow named "${workflowName}" is registered. Known workflows: ${
        known.length ? known.map((n) => `"${n}"`).join(', ') : '(none — mark a provider method with @Workflow())'
      }.`,
    );
  }
}

/** The module or engine was configured with an invalid option. */
export class InvalidOptionsError extends DurableError {
  constructor(message: string) {
    super('INVALID_OPTIONS', message);
  }
}

/** A value (input, output, step result) cannot be stored losslessly as JSON. */
export class SerializationError extends DurableError {
  constructor(
    readonly where: string,
    readonly path: string,
    reason: string,
  ) {
    super(
      'SERIALIZATION',
      `${where}: cannot store the value at ${path}: ${reason}. Return plain data (objects, arrays, strings, ` +
        `numbers, booleans, null, Date, BigInt, Map, Set, Error) from workflows and steps.`,
    );
  }
}

/** A serialized value is larger than the configured `maxPayloadBytes`. */
export class PayloadTooLargeError extends DurableError {
  constructor(
    readonly where: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(
      'PAYLOAD_TOO_LARGE',
      `${where}: the serialized value is ${bytes} bytes, above the limit of ${limit} bytes. Store large data in ` +
        `your own tables and pass its id, or raise DurableModule option maxPayloadBytes.`,
    );
  }
}

/** The code of a workflow no longer matches the steps recorded for a run (non-deterministic replay). */
export class DeterminismError extends DurableError {
  constructor(
    readonly runId: string,
    readonly seq: number,
    readonly recorded: string,
    readonly actual: string,
  ) {
    super(
      'NON_DETERMINISTIC',
      `Run ${runId}: step #${seq} was recorded as "${recorded}" but the workflow code now calls "${actual}" at that ` +
        `position. Workflow code must call the same steps in the same order on every replay: keep the old code ` +
        `path for in-flight runs (or version the workflow name), then resume or fork the run.`,
    );
  }
}

/** `start()` with an id that already belongs to a run of another workflow. */
export class IdempotencyConflictError extends DurableError {
  constructor(
    readonly runId: string,
    readonly existingWorkflow: string,
    readonly requestedWorkflow: string,
  ) {
    super(
      'IDEMPOTENCY_CONFLICT',
      `Run id "${runId}" already belongs to workflow "${existingWorkflow}", not "${requestedWorkflow}". ` +
        `Use a different id (ids are unique across all workflows).`,
    );
  }
}

/** The run does not exist. */
export class RunNotFoundError extends DurableError {
  constructor(readonly runId: string) {
    super('RUN_NOT_FOUND', `No run with id "${runId}".`);
  }
}

/** An operation is not allowed in the run's current status (e.g. resume a SUCCEEDED run). */
export class IllegalTransitionError extends DurableError {
  constructor(
    readonly runId: string,
    readonly status: string,
    action: string,
    allowed: string[],
  ) {
    super(
      'ILLEGAL_TRANSITION',
      `Cannot ${action} run "${runId}": it is ${status}; ${action} applies to runs that are ${allowed.join(' or ')}.`,
    );
  }
}

/** `WorkflowHandle.result()` of a run that ended FAILED. `cause` holds the stored error. */
export class WorkflowFailedError extends DurableError {
  constructor(
    readonly runId: string,
    readonly runError: unknown,
  ) {
    const msg = (runError as { message?: string } | null)?.message ?? String(runError);
    super('WORKFLOW_FAILED', `Run ${runId} failed: ${msg}`);
  }
}

/** `WorkflowHandle.result()` of a run that was cancelled. */
export class WorkflowCancelledError extends DurableError {
  constructor(readonly runId: string) {
    super('WORKFLOW_CANCELLED', `Run ${runId} was cancelled. Resume it with WorkflowClient.resume("${runId}").`);
  }
}

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

/** The durable_* tables are missing or out of date. */
export class SchemaMissingError extends DurableError {
  constructor(missing: string[]) {
    super(
      'SCHEMA_MISSING',
      `nestjs-durable cannot find ${missing.join(', ')} in the database. With Prisma migrations: run ` +
        `\`npx nestjs-durable init\` (adds durable.prisma to your Prisma schema folder), then ` +
        `\`npx prisma migrate dev --name durable\` (production: \`npx prisma migrate deploy\`). With your own SQL ` +
        `migrations: add node_modules/nestjs-durable/prisma/schema.sql to them.`,
    );
  }
}

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

/** A durable API (Durable.sleep, Durable.tx, …) was used outside a running workflow or step. */
export class NotInWorkflowError extends DurableError {
  constructor(api: string, where = 'a running workflow') {
    super('NOT_IN_WORKFLOW', `${api} can only be called inside ${where}.`);
  }
}

/**
 * Throw this from a step to fail it at once, without further retries.
 * Any other error is retried according to the step's retry policy.
 */
export class NonRetryableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'NonRetryableError';
  }
}
