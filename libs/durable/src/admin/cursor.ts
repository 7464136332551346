import type { SortKey, SortOrder } from '../store/admin-list.js';
import { AdminParamError, MAX_NAME } from './param-error.js';

/** Where a page ended: the sort value and id of its last run. */
export interface Cursor {
  at: Date;
  id: string;
}

/**
 * Opaque to clients: base64url of JSON { s: sort, o: order, t: ISO time, i: run id }. The
 * sort and order are inside so that a cursor is never applied to another ordering.
 */
export function encodeCursor(sort: SortKey, order: SortOrder, at: string, id: string): string {
  return Buffer.from(JSON.stringify({ s: sort, o: order, t: at, i: id }), 'utf8').toString('base64url');
}

export function decodeCursor(text: string, sort: SortKey, order: SortOrder): Cursor {
  const bad = (why: string) => new AdminParamError('cursor', `${why}; pass the nextCursor of a previous page unchanged`);
  if (!/^[A-Za-z0-9_-]+$/.test(text)) throw bad('not a cursor (base64url expected)');
  let c: unknown;
  try {
    c = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    throw bad('not a cursor');
  }
  const { s, o, t, i } = (c ?? {}) as Record<string, unknown>;
  if (typeof t !== 'string' || typeof i !== 'string' || !i.length || i.length > MAX_NAME || i.includes('\u0000')) throw bad('not a cursor');
  const at = new Date(t);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(t) || Number.isNaN(at.getTime())) throw bad('not a cursor');
  if (s !== sort || o !== order) throw bad(`issued for sort=${String(s)}&order=${String(o)}, not sort=${sort}&order=${order}`);
  return { at, id: i };
}
