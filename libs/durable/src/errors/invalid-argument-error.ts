import { DurableError } from './durable-error.js';

/** A call got an argument out of range (a bad id, topic, delay, …). `parameter` names it when known. */
export class InvalidArgumentError extends DurableError {
  constructor(
    message: string,
    readonly parameter?: string,
  ) {
    super('INVALID_ARGUMENT', message);
  }
}
