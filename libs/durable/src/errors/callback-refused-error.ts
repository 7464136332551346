import { DurableError } from './durable-error.js';

/**
 * Why a callback was refused (nothing was delivered to the run):
 * - `invalid`: the token is not one this app signed (forged, truncated, or signed with another secret);
 * - `expired`: its wait's timeout passed;
 * - `ended`: the run it resumes has ended;
 * - `used`: it was delivered already, with another body (the same body again is accepted: a retry).
 */
export type CallbackRefusal = 'invalid' | 'expired' | 'ended' | 'used';

/** A callback URL (Durable.callback) was called and refused; the HTTP endpoint answers 404, 410, 410 or 409. */
export class CallbackRefusedError extends DurableError {
  constructor(
    readonly reason: CallbackRefusal,
    message: string,
  ) {
    super('CALLBACK_REFUSED', message);
  }
}
