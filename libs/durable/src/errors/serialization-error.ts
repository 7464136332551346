import { DurableError } from './durable-error.js';

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
