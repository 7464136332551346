import { DurableError } from './durable-error.js';

/** A @Workflow()/@Step() declaration the engine cannot use (wrong provider scope, conflicting decorators). Thrown at boot. */
export class InvalidDefinitionError extends DurableError {
  constructor(message: string) {
    super('INVALID_DEFINITION', message);
  }
}
