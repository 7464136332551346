import { DurableError } from './durable-error.js';

/** The module, the engine, a decorator or the admin API was configured with a missing or invalid option. */
export class InvalidOptionsError extends DurableError {
  constructor(message: string) {
    super('INVALID_OPTIONS', message);
  }
}
