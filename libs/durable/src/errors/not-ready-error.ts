import { DurableError } from './durable-error.js';

/** The engine was used before the app module initialised it (or after it stopped). */
export class NotReadyError extends DurableError {
  constructor(message: string) {
    super('NOT_READY', message);
  }
}
