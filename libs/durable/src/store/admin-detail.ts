/** The admin API's view of one run: everything about it in one round trip, and a short summary. */
import * as mysql from './mysql/admin-views.js';
import { iso, parsed, runStore, type Store } from './store.js';
import type { RunStatus } from './rows.js';
export { CLIP_BYTES } from './admin-rows.js';
import { CLIP_BYTES } from './admin-rows.js';
export { DETAIL_LIMITS } from './admin-rows.js';
import { DETAIL_LIMITS } from './admin-rows.js';
export type { RunDetailRow } from './admin-rows.js';
import type { RunDetailRow } from './admin-rows.js';
import { detailRun, detailTotals, runSummaryOf } from './admin-rows.js';

/** A jsonb value, or { $truncated, bytes, preview } when its text is longer than CLIP_BYTES. */
const clip = (col: string) => `CASE WHEN octet_length(${col}::text) > ${CLIP_BYTES}
  THEN jsonb_build_object('$truncated', true, 'bytes', octet_length(${col}::text), 'preview', left(${col}::text, 2000))
  ELSE ${col} END`;

/**
 * One run with everything about it, in one round trip. $1 run id. Indexes: durable_runs_pkey,
 * durable_steps_pkey, durable_messages_idempotency_key (leading run_id), durable_events_pkey,
 * durable_run_events_run_idx, durable_runs_parent_idx.
 */
export const SELECT_RUN_DETAIL = `
SELECT r.id, r.workflow_name, r.queue, r.status, r.input, r.output, r.error, r.priority, r.attempt,
  r.lease_owner, r.lease_expires_at, r.lease_epoch, r.parent_id, r.app_version, r.deadline_at, r.available_at,
  r.created_at, r.started_at, r.finished_at, r.updated_at, r.cancel_requested_at, r.tags, ${clip('r.progress')} AS progress, now() AS db_now,
  r.concurrency_key,
  r.traceparent, split_part(r.traceparent, '-', 2) AS trace_id, r.context,
  (SELECT count(*) FROM durable_steps s WHERE s.run_id = r.id)::int AS steps_total,
  (SELECT coalesce(json_agg(json_build_object('seq', s.seq, 'name', s.name, 'status', s.status, 'attempts', s.attempts,
      'startedAt', s.started_at, 'finishedAt', s.finished_at,
      'durationMs', extract(epoch FROM s.finished_at - s.started_at) * 1000,
      'output', ${clip('s.output')}, 'error', ${clip('s.error')}, 'compensation', ${clip('s.compensation')},
      'compensates', s.compensates) ORDER BY s.seq), '[]'::json)
   FROM (SELECT * FROM durable_steps WHERE run_id = r.id ORDER BY seq LIMIT ${DETAIL_LIMITS.steps}) s) AS steps,
  (SELECT count(*) FROM durable_messages m WHERE m.run_id = r.id)::int AS messages_total,
  (SELECT coalesce(json_agg(json_build_object('id', m.id::text, 'topic', m.topic, 'payload', ${clip('m.payload')},
      'idempotencyKey', m.idempotency_key, 'createdAt', m.created_at, 'consumedSeq', m.consumed_seq,
      'consumedAt', m.consumed_at) ORDER BY m.id), '[]'::json)
   FROM (SELECT * FROM durable_messages WHERE run_id = r.id ORDER BY id DESC LIMIT ${DETAIL_LIMITS.messages}) m) AS messages,
  (SELECT count(*) FROM durable_events e WHERE e.run_id = r.id)::int AS events_total,
  (SELECT coalesce(json_agg(json_build_object('key', e.key, 'value', ${clip('e.value')}, 'updatedAt', e.updated_at)
      ORDER BY e.key), '[]'::json)
   FROM (SELECT * FROM durable_events WHERE run_id = r.id ORDER BY key LIMIT ${DETAIL_LIMITS.events}) e) AS events,
  (SELECT count(*) FROM durable_run_events h WHERE h.run_id = r.id)::int AS history_total,
  (SELECT coalesce(json_agg(json_build_object('id', h.id::text, 'kind', h.kind, 'detail', ${clip('h.detail')}, 'at', h.at)
      ORDER BY h.id), '[]'::json)
   FROM (SELECT * FROM durable_run_events WHERE run_id = r.id ORDER BY id DESC LIMIT ${DETAIL_LIMITS.history}) h) AS history,
  (SELECT count(*) FROM durable_runs c WHERE c.parent_id = r.id)::int AS children_total,
  (SELECT coalesce(json_agg(json_build_object('id', c.id, 'workflowName', c.workflow_name, 'status', c.status,
      'createdAt', c.created_at, 'finishedAt', c.finished_at) ORDER BY c.created_at, c.id), '[]'::json)
   FROM (SELECT * FROM durable_runs WHERE parent_id = r.id ORDER BY created_at, id LIMIT ${DETAIL_LIMITS.children}) c) AS children
FROM durable_runs r WHERE r.id = $1`;

/** Status of a run after cancel/resume. $1 run id. Index: durable_runs_pkey. */
export const SELECT_RUN_SUMMARY = `SELECT id, workflow_name, status, updated_at, cancel_requested_at FROM durable_runs WHERE id = $1`;

export async function runDetail(store: Store, id: string): Promise<RunDetailRow | null> {
  if (store.sql.dialect === 'mysql') return mysql.runDetail(store, id);
  const [r] = await runStore(store, id).sql.query<Record<string, unknown>>(SELECT_RUN_DETAIL, [id]);
  if (!r) return null;
  const list = (k: string) => parsed<Array<Record<string, unknown>>>(r[k]) ?? [];
  const steps = list('steps').map((s) => ({
    ...s,
    startedAt: iso(s.startedAt),
    finishedAt: iso(s.finishedAt),
    durationMs: s.durationMs == null ? null : Math.round(Number(s.durationMs) * 1000) / 1000,
  }));
  const messages = list('messages').map((m) => ({ ...m, createdAt: iso(m.createdAt), consumedAt: iso(m.consumedAt) }));
  const events = list('events').map((e) => ({ ...e, updatedAt: iso(e.updatedAt) }));
  const history = list('history').map((h) => ({ ...h, at: iso(h.at) }));
  const children = list('children').map((c) => ({ ...c, createdAt: iso(c.createdAt), finishedAt: iso(c.finishedAt) }));
  const run = detailRun(r, steps, (v) => v);
  return {
    run,
    steps,
    messages,
    events,
    history,
    children,
    dbNow: iso(r.db_now)!,
    totals: detailTotals(r),
  };
}

export async function runSummary(
  store: Store,
  id: string,
): Promise<{ id: string; workflowName: string; status: RunStatus; updatedAt: string; cancelRequestedAt: string | null } | null> {
  if (store.sql.dialect === 'mysql') return mysql.runSummary(store, id);
  const [r] = await runStore(store, id).sql.query<Record<string, unknown>>(SELECT_RUN_SUMMARY, [id]);
  return runSummaryOf(r);
}
