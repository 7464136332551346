import { DurableError } from './durable-error.js';

/** DurableCallback.wait(): nobody called the callback URL before its timeout. */
export class CallbackTimeoutError extends DurableError {
  constructor(readonly timeoutMs: number) {
    super('CALLBACK_TIMEOUT', `The callback was not called within ${timeoutMs} ms; its URL no longer works.`);
  }
}
