import { createHmac, timingSafeEqual } from 'node:crypto';
import { CallbackRefusedError } from '../errors/index.js';

/** What a callback token says: the run and callback it resumes, until when, and the signal its body must be. */
export interface CallbackClaim {
  runId: string;
  /** The callback's id (recorded by the run: the same on every replay). */
  id: string;
  expiresAt: number;
  /** The signal whose payload check applies to the body; '' for any JSON. */
  signal: string;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64url');
const unb64 = (s: string) => Buffer.from(s, 'base64url').toString('utf8');
const mac = (secret: Buffer, c: CallbackClaim) =>
  createHmac('sha256', secret).update(`nestjs-durable callback v1\n${c.runId}\n${c.id}\n${c.expiresAt}\n${c.signal}`).digest();

/**
 * The token of a callback: its claim and an HMAC-SHA256 of it under the app's secret (256 bits),
 * so nothing secret is stored and every instance (and every replay) makes the same token.
 * URL-safe: base64url and hex parts joined by dots.
 */
export function signCallback(secret: Buffer, c: CallbackClaim): string {
  return [b64(c.runId), c.id, c.expiresAt.toString(36), b64(c.signal), mac(secret, c).toString('base64url')].join('.');
}

/** The claim of a token this app signed; CallbackRefusedError('invalid') for anything else (compared in constant time). */
export function verifyCallback(secret: Buffer, token: unknown): CallbackClaim {
  const refuse = () => new CallbackRefusedError('invalid', 'This callback URL is not valid (its token is unknown, altered or incomplete).');
  if (typeof token !== 'string' || token.length > 2048) throw refuse();
  const parts = token.split('.');
  if (parts.length !== 5 || !/^[0-9a-f]{32}$/.test(parts[1]) || !/^[0-9a-z]{1,12}$/.test(parts[2])) throw refuse();
  const claim: CallbackClaim = { runId: unb64(parts[0]), id: parts[1], expiresAt: parseInt(parts[2], 36), signal: unb64(parts[3]) };
  const given = Buffer.from(parts[4], 'base64url');
  const expected = mac(secret, claim);
  if (!claim.runId || given.length !== expected.length || !timingSafeEqual(given, expected)) throw refuse();
  return claim;
}
