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
