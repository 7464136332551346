import { DurableError } from './durable-error.js';

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
