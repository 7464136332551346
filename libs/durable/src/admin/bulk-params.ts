import { BULK_ACTIONS, MAX_BULK_BATCH, type BulkAction } from '../engine/bulk.js';
import type { RunFilter } from '../store/admin-list.js';
import { AdminParamError } from './param-error.js';
import { FILTER_PARAMS, integer, onlyKnown, parseFilter, type Query } from './params.js';

/**
 * A bulk action in two requests: a dry run (preview) counts the runs and returns a token; the
 * execute request sends the token back, once per batch, and gets the next token until it is null.
 * The token is opaque to clients and signed (see BulkTokens in bulk-token.ts).
 */

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

/** POST runs/bulk/execute: { token, batchSize?, action? } (`action`: refuse the token unless it confirms this action). */
export function parseBulkExecute(raw: unknown): { token: string; batchSize: number; action: BulkAction | null } {
  const b = body(
    raw,
    ['token', 'batchSize', 'action'],
    '{ "token": "<token of the preview or of the previous batch>", "batchSize"?: 1..1000, "action"?: "cancel|resume|retry|delete" }',
  );
  if (typeof b.token !== 'string' || !b.token.length) {
    throw new AdminParamError('token', 'required; send the token of POST runs/bulk/preview (or of the previous batch) unchanged');
  }
  return {
    token: b.token,
    batchSize: b.batchSize === undefined ? 200 : integer('batchSize', b.batchSize, 1, MAX_BULK_BATCH),
    action: b.action === undefined ? null : action(b.action),
  };
}
