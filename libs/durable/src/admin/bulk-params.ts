import { BULK_ACTIONS, MAX_BULK_BATCH, type BulkAction, type BulkPosition } from '../engine/bulk.js';
import type { RunFilter } from '../store/admin-list.js';
import { AdminParamError } from './param-error.js';
import { FILTER_PARAMS, instant, integer, onlyKnown, parseFilter, type Query } from './params.js';

/**
 * A bulk action in two requests: a dry run (preview) counts the runs and returns a token; the
 * execute request sends the token back, once per batch, and gets the next token until it is null.
 * The token is opaque to clients: base64url of JSON { v, a: action, q: the filter as given, c:
 * compensate, t: the dry run's database time, k: where the next batch starts, n: matched, d/s:
 * done/skipped so far }. It holds no secret: it only spares the client from re-sending the
 * filter, and it is what makes the confirmation explicit (no token, no change).
 */
export interface BulkToken {
  action: BulkAction;
  query: Query;
  filter: RunFilter;
  compensate: boolean;
  position: BulkPosition;
  matched: number;
  done: number;
  skipped: number;
}

function body(raw: unknown, known: readonly string[], example: string): Record<string, unknown> {
  if (raw === undefined || raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new AdminParamError('body', `must be a JSON object ${example} (Content-Type: application/json)`);
  }
  for (const key of Object.keys(raw)) {
    if (!known.includes(key)) throw new AdminParamError(key.slice(0, 64), `unknown field; the body is ${example}`);
  }
  return raw as Record<string, unknown>;
}

function action(v: unknown): BulkAction {
  if (typeof v !== 'string' || !BULK_ACTIONS.includes(v as BulkAction)) {
    throw new AdminParamError('action', `must be one of ${BULK_ACTIONS.join(', ')}`);
  }
  return v as BulkAction;
}

const PREVIEW_EXAMPLE =
  '{ "action": "cancel|resume|retry|delete", "filter": { "status": "FAILED", "workflow": "…", "tag": "…" }, "compensate"?: true }';

/** POST runs/bulk/preview: { action, filter, compensate? }; filter takes the runs list's parameters (strings or arrays). */
export function parseBulkPreview(raw: unknown): { action: BulkAction; query: Query; filter: RunFilter; compensate: boolean } {
  const b = body(raw, ['action', 'filter', 'compensate'], PREVIEW_EXAMPLE);
  const a = action(b.action);
  if (b.filter !== undefined && (b.filter === null || typeof b.filter !== 'object' || Array.isArray(b.filter))) {
    throw new AdminParamError('filter', `must be an object with the runs list's filter parameters (${FILTER_PARAMS.join(', ')})`);
  }
  const query = onlyKnown(b.filter ?? {}, FILTER_PARAMS);
  if (b.compensate !== undefined && typeof b.compensate !== 'boolean') throw new AdminParamError('compensate', 'must be true or false');
  if (b.compensate === true && a !== 'cancel') throw new AdminParamError('compensate', 'applies to the cancel action only');
  return { action: a, query, filter: parseFilter(query), compensate: b.compensate === true };
}

export function encodeBulkToken(t: Omit<BulkToken, 'filter'>): string {
  const k = t.position.cursor ? { t: t.position.cursor.at.toISOString(), i: t.position.cursor.id } : null;
  const json = {
    v: 1,
    a: t.action,
    q: t.query,
    c: t.compensate,
    t: t.position.asOf.toISOString(),
    k,
    n: t.matched,
    d: t.done,
    s: t.skipped,
  };
  return Buffer.from(JSON.stringify(json), 'utf8').toString('base64url');
}

const MAX_TOKEN = 8192;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** POST runs/bulk/execute: { token, batchSize? }. */
export function parseBulkExecute(raw: unknown): { token: BulkToken; batchSize: number } {
  const b = body(raw, ['token', 'batchSize'], '{ "token": "<token of the preview or of the previous batch>", "batchSize"?: 1..1000 }');
  const bad = (why: string) =>
    new AdminParamError('token', `${why}; send the token of POST runs/bulk/preview (or of the previous batch) unchanged`);
  if (typeof b.token !== 'string' || !b.token.length) throw bad('required');
  if (b.token.length > MAX_TOKEN || !/^[A-Za-z0-9_-]+$/.test(b.token)) throw bad('not a bulk token');
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(Buffer.from(b.token, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    throw bad('not a bulk token');
  }
  if (!j || typeof j !== 'object' || j.v !== 1 || typeof j.t !== 'string' || !ISO.test(j.t)) throw bad('not a bulk token');
  const k = j.k as { t?: unknown; i?: unknown } | null;
  if (
    k !== null &&
    (typeof k !== 'object' ||
      typeof k.t !== 'string' ||
      !ISO.test(k.t) ||
      typeof k.i !== 'string' ||
      !k.i ||
      k.i.length > 256 ||
      k.i.includes('\u0000'))
  ) {
    throw bad('not a bulk token');
  }
  const counts = [j.n, j.d, j.s].map((x) => (typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 ? x : -1));
  if (counts.includes(-1)) throw bad('not a bulk token');
  let preview;
  try {
    preview = parseBulkPreview({ action: j.a, filter: j.q, compensate: j.c });
  } catch {
    throw bad('not a bulk token');
  }
  const time = (v: string) => {
    try {
      return instant('token', v);
    } catch {
      throw bad('not a bulk token');
    }
  };
  return {
    token: {
      ...preview,
      position: { asOf: time(j.t), cursor: k ? { at: time(k.t as string), id: k.i as string } : null },
      matched: counts[0],
      done: counts[1],
      skipped: counts[2],
    },
    batchSize: b.batchSize === undefined ? 200 : integer('batchSize', b.batchSize, 1, MAX_BULK_BATCH),
  };
}
