import type { RunFilter, SortKey, SortOrder } from '../store/admin-list.js';
import { RUN_STATUSES } from '../store/rows.js';
import type { RunStatus } from '../store/rows.js';
import { decodeCursor, type Cursor } from './cursor.js';
import { AdminParamError, MAX_NAME } from './param-error.js';
import { MAX_TAG_LENGTH, MAX_TAGS } from '../config/limits.js';
import { FLOW_LIMIT_KEYS } from '../config/option-checks.js';
import type { QueueLimits } from '../engine/flow-control.js';

export { AdminParamError };
const MAX_VALUES = 50;
const MIN_TIME = Date.UTC(1970, 0, 1);
const MAX_TIME = Date.UTC(10000, 0, 1) - 1;
const ISO_RE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

export type Query = Record<string, unknown>;

/** Rejects parameters the endpoint does not know (a typo must not silently widen a filter). */
export function onlyKnown(query: unknown, known: readonly string[]): Query {
  if (query === undefined || query === null) return {};
  if (typeof query !== 'object' || Array.isArray(query)) throw new AdminParamError('query', 'must be a query string');
  for (const key of Object.keys(query)) {
    if (!known.includes(key)) {
      throw new AdminParamError(
        key.slice(0, 64),
        `unknown parameter; this endpoint accepts ${known.length ? known.join(', ') : 'no parameters'}`,
      );
    }
  }
  return query as Query;
}

/** A text value fit for Postgres: a string of 1..max characters without NUL. */
export function text(name: string, v: unknown, max = MAX_NAME): string {
  if (typeof v !== 'string') throw new AdminParamError(name, 'must be a string');
  if (!v.length) throw new AdminParamError(name, 'must not be empty');
  if (v.length > max) throw new AdminParamError(name, `must be at most ${max} characters`);
  if (v.includes('\u0000')) throw new AdminParamError(name, 'must not contain NUL characters');
  return v;
}

/** A run id from the URL. */
export const runId = (v: unknown) => text('id', v);

/** Values of a parameter given once, repeated, or (when `split`) comma-separated. Empty values are ignored. */
function values(q: Query, name: string, split: boolean, max = MAX_VALUES): string[] | null {
  const v = q[name];
  if (v === undefined || v === null) return null;
  const list = Array.isArray(v) ? v : [v];
  if (list.some((x) => typeof x !== 'string')) throw new AdminParamError(name, 'must be a string (or the parameter repeated)');
  const out = (list as string[])
    .flatMap((x) => (split ? x.split(',') : [x]))
    .map((x) => x.trim())
    .filter((x) => x.length);
  if (out.length > max) throw new AdminParamError(name, `at most ${max} values`);
  out.forEach((x) => text(name, x));
  return out.length ? [...new Set(out)] : null;
}

/** A single value (empty = absent). */
function single(q: Query, name: string, max = MAX_NAME): string | null {
  const v = q[name];
  if (v === undefined || v === null || v === '') return null;
  if (Array.isArray(v)) throw new AdminParamError(name, 'must be given once');
  return text(name, v, max);
}

function oneOf<T extends string>(q: Query, name: string, allowed: readonly T[], dflt: T): T {
  const v = single(q, name, 32);
  if (v === null) return dflt;
  const lower = v.toLowerCase() as T;
  if (!allowed.includes(lower)) throw new AdminParamError(name, `must be one of ${allowed.join(', ')}`);
  return lower;
}

/** An integer in [min, max] (decimal digits only). */
export function integer(name: string, v: unknown, min: number, max: number): number {
  const s = typeof v === 'number' ? String(v) : v;
  if (typeof s !== 'string' || !/^-?\d{1,16}$/.test(s.trim()))
    throw new AdminParamError(name, `must be an integer between ${min} and ${max}`);
  const n = Number(s.trim());
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new AdminParamError(name, `must be an integer between ${min} and ${max}`);
  return n;
}

function intParam(q: Query, name: string, min: number, max: number, dflt: number): number {
  const v = single(q, name, 32);
  return v === null ? dflt : integer(name, v, min, max);
}

/** An instant: ISO 8601 (e.g. 2026-01-31 or 2026-01-31T12:00:00Z) or epoch milliseconds. */
export function instant(name: string, v: string): Date {
  let t: number;
  if (/^\d{1,15}$/.test(v)) t = Number(v);
  else if (ISO_RE.test(v)) t = Date.parse(v.replace(' ', 'T'));
  else throw new AdminParamError(name, 'must be an ISO 8601 date-time (e.g. 2026-01-31T12:00:00Z) or epoch milliseconds');
  if (!Number.isFinite(t) || t < MIN_TIME || t > MAX_TIME) throw new AdminParamError(name, 'must be a valid date between 1970 and 9999');
  return new Date(t);
}

function range(q: Query, from: string, to: string): [Date | null, Date | null] {
  const a = single(q, from, 64),
    b = single(q, to, 64);
  const da = a === null ? null : instant(from, a);
  const db = b === null ? null : instant(to, b);
  if (da && db && da.getTime() > db.getTime()) throw new AdminParamError(from, `must not be after ${to}`);
  return [da, db];
}

/** The parameters that select runs (runs list, bulk actions, live list, CLI). */
export const FILTER_PARAMS = [
  'status',
  'workflow',
  'queue',
  'createdFrom',
  'createdTo',
  'finishedFrom',
  'finishedTo',
  'idPrefix',
  'parentId',
  'tag',
  'input',
  'id',
] as const;

export const LIST_PARAMS = [...FILTER_PARAMS, 'sort', 'order', 'limit', 'cursor'] as const;

const MAX_INPUT_FILTER = 2000;
/** Most run ids one `id` filter names (a page of the dashboard's list). */
const MAX_IDS = 200;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** `input`: a JSON object the run's input must contain (Postgres jsonb `@>`), e.g. {"customer":"acme"}. */
function inputFilter(q: Query): unknown {
  const v = single(q, 'input', MAX_INPUT_FILTER);
  if (v === null) return null;
  const bad = (why: string) => new AdminParamError('input', `${why}; pass a JSON object the input must contain, e.g. {"customer":"acme"}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch {
    throw bad('is not JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw bad('must be a JSON object');
  if (!Object.keys(parsed).length) throw bad('must name at least one field');
  // Postgres jsonb cannot hold \u0000 or a lone surrogate (it would answer an error, not "no match").
  JSON.stringify(parsed, (key: string, x: unknown) => {
    for (const s of typeof x === 'string' ? [key, x] : [key]) {
      if (s.includes('\u0000') || LONE_SURROGATE.test(s)) throw bad('must not contain NUL characters or lone surrogates');
    }
    return x;
  });
  return parsed;
}

/** The run filter of a query (or a bulk action's body): every value checked. */
export function parseFilter(q: Query): RunFilter {
  const statuses = values(q, 'status', true)?.map((s) => s.toUpperCase()) ?? null;
  for (const s of statuses ?? []) {
    if (!(RUN_STATUSES as readonly string[]).includes(s))
      throw new AdminParamError('status', `"${s.slice(0, 40)}" is not a status; use ${RUN_STATUSES.join(', ')}`);
  }
  const [createdFrom, createdTo] = range(q, 'createdFrom', 'createdTo');
  const [finishedFrom, finishedTo] = range(q, 'finishedFrom', 'finishedTo');
  const tags = values(q, 'tag', true);
  if (tags && tags.length > MAX_TAGS) throw new AdminParamError('tag', `at most ${MAX_TAGS} tags`);
  for (const t of tags ?? [])
    if (t.length > MAX_TAG_LENGTH) throw new AdminParamError('tag', `a tag has at most ${MAX_TAG_LENGTH} characters`);
  return {
    statuses: statuses as RunStatus[] | null,
    workflows: values(q, 'workflow', false),
    queues: values(q, 'queue', false),
    createdFrom,
    createdTo,
    finishedFrom,
    finishedTo,
    idPrefix: single(q, 'idPrefix'),
    parentId: single(q, 'parentId'),
    tags,
    input: inputFilter(q),
    ids: values(q, 'id', true, MAX_IDS),
  };
}

export interface ListQuery {
  filter: RunFilter;
  sort: SortKey;
  order: SortOrder;
  limit: number;
  cursor: Cursor | null;
}

/** GET runs: every parameter checked, nothing passed on unchecked. */
export function parseListQuery(raw: unknown): ListQuery {
  const q = onlyKnown(raw, LIST_PARAMS);
  const filter = parseFilter(q);
  const sort = oneOf(q, 'sort', ['created', 'updated'] as const, 'created');
  const order = oneOf(q, 'order', ['desc', 'asc'] as const, 'desc');
  const cursorText = single(q, 'cursor', 1024);
  const cursor = cursorText === null ? null : decodeCursor(cursorText, sort, order);
  return {
    filter,
    sort,
    order,
    limit: intParam(q, 'limit', 1, 200, 50),
    cursor,
  };
}

/** GET live: `run` (a run open in a detail view) and `stats` (true: send the stats too). */
export function parseLiveQuery(raw: unknown): { run: string | null; stats: boolean } {
  const q = onlyKnown(raw, ['run', 'stats']);
  const stats = single(q, 'stats', 8);
  if (stats !== null && stats !== 'true' && stats !== 'false') throw new AdminParamError('stats', 'must be true or false');
  return { run: single(q, 'run'), stats: stats === 'true' };
}

/** GET charts: range=1h|24h|7d (default 24h). */
export function parseChartsQuery(raw: unknown): { range: '1h' | '24h' | '7d' } {
  const q = onlyKnown(raw, ['range']);
  return { range: oneOf(q, 'range', ['1h', '24h', '7d'] as const, '24h') };
}

/** GET stats. */
export function parseStatsQuery(raw: unknown): { windowMinutes: number } {
  const q = onlyKnown(raw, ['windowMinutes']);
  return { windowMinutes: intParam(q, 'windowMinutes', 1, 10_080, 60) };
}

/** POST runs/:id/fork body: { fromStep }. */
export function parseForkBody(body: unknown): { fromStep: number } {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new AdminParamError('fromStep', 'required: send a JSON object { "fromStep": <step seq> } with Content-Type: application/json');
  }
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b))
    if (key !== 'fromStep') throw new AdminParamError(key.slice(0, 64), 'unknown field; the body is { "fromStep": <step seq> }');
  if (b.fromStep === undefined || b.fromStep === null)
    throw new AdminParamError('fromStep', 'required: the seq of the first step to execute again (0 = from the start)');
  return { fromStep: integer('fromStep', b.fromStep, 0, 1_000_000) };
}

/**
 * Body of POST runs/:id/cancel: nothing (or {}) for a plain cancel, `{ "compensate": true }` to
 * undo what the run did first.
 */
export function parseCancelBody(body: unknown): { compensate: boolean } {
  if (body === undefined || body === null || (typeof body === 'string' && body === '')) return { compensate: false };
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new AdminParamError('body', 'must be a JSON object { "compensate"?: true|false } (Content-Type: application/json)');
  }
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b))
    if (key !== 'compensate') throw new AdminParamError(key.slice(0, 64), 'unknown field; the body is { "compensate"?: true|false }');
  if (b.compensate !== undefined && typeof b.compensate !== 'boolean') throw new AdminParamError('compensate', 'must be true or false');
  return { compensate: b.compensate === true };
}

/** A schedule id from the URL. */
export const scheduleId = (v: unknown) => text('id', v, MAX_SCHEDULE_ID);
const MAX_SCHEDULE_ID = 200;

export const SCHEDULE_LIST_PARAMS = ['workflow', 'paused', 'after', 'limit'] as const;

export interface ScheduleListQuery {
  workflow: string | null;
  paused: boolean | null;
  after: string;
  limit: number;
}

/** GET schedules: by id (keyset: `after` = the last id of the previous page), filtered by workflow and paused state. */
export function parseScheduleListQuery(raw: unknown): ScheduleListQuery {
  const q = onlyKnown(raw, SCHEDULE_LIST_PARAMS);
  const paused = single(q, 'paused', 8);
  if (paused !== null && paused !== 'true' && paused !== 'false') throw new AdminParamError('paused', 'must be true or false');
  return {
    workflow: single(q, 'workflow'),
    paused: paused === null ? null : paused === 'true',
    after: single(q, 'after', MAX_SCHEDULE_ID) ?? '',
    limit: intParam(q, 'limit', 1, 200, 50),
  };
}

/** GET schedules/:id: how many of its latest runs to include (1..100, default 20). */
export function parseScheduleDetailQuery(raw: unknown): { runs: number } {
  const q = onlyKnown(raw, ['runs']);
  return { runs: intParam(q, 'runs', 1, 100, 20) };
}

/** A queue name in a path (flow control routes). */
/** A queue name from the URL: also without control characters (they would be stored and shown as they are). */
export function queueName(v: unknown): string {
  const name = text('queue', v);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(name)) throw new AdminParamError('queue', 'must not contain control characters (CR, LF, ESC, …)');
  return name;
}

/** Query of GET flow/queues/:queue/keys: `limit` 1..1000 (default 50). */
/** Query of GET backfills: `limit` 1..1000 (default 50). */
export function parseBackfillsQuery(raw: unknown): { limit: number } {
  const q = onlyKnown(raw, ['limit']);
  return { limit: intParam(q, 'limit', 1, 1000, 50) };
}

/** Query of GET runs/:id/streams/:stream: `from` (a position, default 0), `limit` 1..500 (default 100). */
export function parseStreamPageQuery(raw: unknown): { from: number; limit: number } {
  const q = onlyKnown(raw, ['from', 'limit']);
  return { from: intParam(q, 'from', 0, 2_147_483_647, 0), limit: intParam(q, 'limit', 1, 500, 100) };
}

export function parseFlowKeysQuery(raw: unknown): { limit: number } {
  const q = onlyKnown(raw, ['limit']);
  return { limit: intParam(q, 'limit', 1, 1000, 50) };
}

/**
 * Body of POST flow/queues/:queue/limits, a partial update: `{ "globalConcurrency"?: n | null,
 * "keyConcurrency"?: n | null, "rateLimit"?: { "limit": n, "periodMs": ms } | null, "keyRateLimit"?: … }`.
 * Only the fields given change (null removes that limit); the engine checks the values (400 with what to send).
 */
export function parseLimitsBody(body: unknown): QueueLimits {
  const shape = `{ ${FLOW_LIMIT_KEYS.map((k) => `"${k}"?: …`).join(', ')} } (concurrency: <n or null>; rate limits: { "limit": <n>, "periodMs": <ms> } or null; absent: unchanged)`;
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new AdminParamError('body', `required: send a JSON object ${shape} with Content-Type: application/json`);
  }
  const b = body as Record<string, unknown>;
  for (const key of Object.keys(b)) {
    if (!FLOW_LIMIT_KEYS.includes(key)) throw new AdminParamError(key.slice(0, 64), `unknown field; the body is ${shape}`);
  }
  if (!Object.keys(b).length) throw new AdminParamError('body', `names no limit; send ${shape}`);
  return Object.fromEntries(FLOW_LIMIT_KEYS.filter((k) => k in b).map((k) => [k, b[k]])) as QueueLimits;
}

/** A query with only `force` (true/false, default false): e.g. limits for a queue no registered workflow uses. */
export function parseForceQuery(raw: unknown): { force: boolean } {
  const force = single(onlyKnown(raw, ['force']), 'force', 8);
  if (force !== null && force !== 'true' && force !== 'false') throw new AdminParamError('force', 'must be true or false');
  return { force: force === 'true' };
}
