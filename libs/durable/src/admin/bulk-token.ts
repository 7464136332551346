import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { BulkAction, BulkPosition } from '../engine/bulk.js';
import { InvalidArgumentError } from '../errors/index.js';
import type { RunFilter } from '../store/admin-list.js';
import { parseBulkPreview } from './bulk-params.js';
import { instant, type Query } from './params.js';

/** A confirmed bulk action and where it is: what a bulk token carries. */
export interface BulkToken {
  action: BulkAction;
  query: Query;
  filter: RunFilter;
  compensate: boolean;
  position: BulkPosition;
  matched: number;
  /** `matched` is a lower bound (a status had more runs than the count cap): the count does not bound the action. */
  capped: boolean;
  done: number;
  skipped: number;
}

/** Why a bulk token is refused. */
export type BulkTokenProblem = 'malformed' | 'altered' | 'expired' | 'reused' | 'wrong-action';

/** A bulk token the admin API refuses: nothing was changed. 409 for a token already used, 400 otherwise. */
export class BulkTokenError extends InvalidArgumentError {
  readonly status: 400 | 409;

  constructor(
    readonly reason: BulkTokenProblem,
    detail: string,
  ) {
    super(`Bulk token refused (${reason}): ${detail}. Nothing was changed.`, 'token');
    this.status = reason === 'reused' ? 409 : 400;
  }
}

/** How long a token (of the preview, or of the previous batch) can be sent: 15 minutes. */
export const BULK_TOKEN_TTL_MS = 15 * 60_000;
const MAX_TOKEN = 8192;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SEND_AGAIN = 'send the token of POST runs/bulk/preview (or of the previous batch) unchanged';

/**
 * Bulk tokens: base64url(JSON payload) "." base64url(HMAC-SHA256 of the payload) with this
 * instance's key. The payload binds the action, the filter as given, compensate, the dry run's
 * database time (runs created later are never touched), the matched count (the action never
 * changes more runs than that, unless the count was capped), where the next batch starts, the
 * progress, an expiry and a token id. A token is single use: its id is remembered until it
 * expires, so a replay is refused instead of acting again (ids are kept in this process: with a
 * shared key, a replay on another instance re-selects its batch, where runs already changed no
 * longer match the action's statuses).
 */
export class BulkTokens {
  private readonly key: Buffer;
  /** Whether the key was made at boot (then tokens do not survive a restart or cross instances). */
  readonly generatedKey: boolean;
  private readonly used = new Map<string, number>();

  constructor(
    secret?: string | Buffer,
    private readonly ttlMs = BULK_TOKEN_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {
    this.generatedKey = secret === undefined;
    this.key = secret === undefined ? randomBytes(32) : Buffer.from(secret);
  }

  /** A signed token for `t`, valid for the next ttlMs. */
  sign(t: Omit<BulkToken, 'filter'>): string {
    const k = t.position.cursor ? { t: t.position.cursor.at.toISOString(), i: t.position.cursor.id } : null;
    const payload = {
      v: 2,
      a: t.action,
      q: t.query,
      c: t.compensate,
      t: t.position.asOf.toISOString(),
      k,
      n: t.matched,
      x: t.capped,
      d: t.done,
      s: t.skipped,
      e: this.now() + this.ttlMs,
      j: randomBytes(12).toString('base64url'),
    };
    const body = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
    return `${body}.${this.mac(body).toString('base64url')}`;
  }

  /**
   * Checks the token (signature in constant time, expiry, not used yet, the expected action) and
   * marks it used; `release` gives it back when the batch could not run (e.g. the database was away).
   */
  open(token: string, expectedAction: BulkAction | null): { token: BulkToken; release: () => void } {
    if (token.length > MAX_TOKEN || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token)) {
      throw new BulkTokenError('malformed', `not a bulk token; ${SEND_AGAIN}`);
    }
    const [body, sig] = token.split('.');
    const given = Buffer.from(sig, 'base64url');
    const expected = this.mac(body);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new BulkTokenError('altered', `its signature does not match (changed, or made by an instance with another key); ${SEND_AGAIN}`);
    }
    const j = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
    const t = decode(j);
    if (typeof j.e !== 'number' || j.e <= this.now()) {
      throw new BulkTokenError('expired', 'it is older than its 15-minute validity; make a new preview');
    }
    if (expectedAction !== null && expectedAction !== t.action) {
      throw new BulkTokenError('wrong-action', `it confirms "${t.action}", not "${expectedAction}"`);
    }
    const id = String(j.j);
    this.prune();
    if (this.used.has(id)) {
      throw new BulkTokenError('reused', 'it was already executed; send the token its answer returned (null: the action is complete)');
    }
    this.used.set(id, j.e);
    return { token: t, release: () => this.used.delete(id) };
  }

  private mac(body: string): Buffer {
    return createHmac('sha256', this.key).update(`nestjs-durable bulk token\n${body}`).digest();
  }

  /** Forgets the ids of expired tokens (they are refused as expired anyway). */
  private prune(): void {
    const now = this.now();
    for (const [id, expires] of this.used) if (expires <= now) this.used.delete(id);
  }
}

/** The payload of a correctly signed token (checked all the same: a key can leak). */
function decode(j: Record<string, unknown>): BulkToken {
  const bad = () => new BulkTokenError('malformed', `not a bulk token; ${SEND_AGAIN}`);
  if (!j || typeof j !== 'object' || j.v !== 2 || typeof j.t !== 'string' || !ISO.test(j.t) || typeof j.j !== 'string') throw bad();
  const k = j.k as { t?: unknown; i?: unknown } | null;
  if (k !== null && (typeof k !== 'object' || typeof k.t !== 'string' || !ISO.test(k.t) || typeof k.i !== 'string' || !k.i)) throw bad();
  const counts = [j.n, j.d, j.s].map((x) => (typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 ? x : -1));
  if (counts.includes(-1) || typeof j.x !== 'boolean') throw bad();
  let preview;
  try {
    preview = parseBulkPreview({ action: j.a, filter: j.q, compensate: j.c });
  } catch {
    throw bad();
  }
  const time = (v: string) => instant('token', v);
  return {
    ...preview,
    position: { asOf: time(j.t), cursor: k ? { at: time(k.t as string), id: k.i as string } : null },
    matched: counts[0],
    capped: j.x,
    done: counts[1],
    skipped: counts[2],
  };
}
