/** The live feed's one statement per interval (admin/live-feed.ts): what changed, for every subscriber at once. */
import * as mysql from './mysql/admin-views.js';
import { statement } from './statement.js';
import type { Store } from './store.js';
export { LIVE_CHANGED_LIMIT } from './admin-rows.js';
import { LIVE_CHANGED_LIMIT } from './admin-rows.js';
export type { LiveTick } from './admin-rows.js';
import type { LiveTick } from './admin-rows.js';

/** A row version's xmin (32 bits, wraps) as a full transaction id, relative to the statement's snapshot. */
const FULL_XMIN = `(x.xmax - ((x.xmax % 4294967296 - r.xmin::text::bigint + 4294967296) % 4294967296))`;

/**
 * One tick of the live feed. $1 since (timestamptz: the oldest time a change not seen yet can
 * carry), $2 horizon (a full transaction id, or null: every row updated since $1), $3 watched run
 * ids (the runs open in a detail view somewhere, at most a few hundred).
 *
 * "Changed" = run rows updated since $1 (index durable_runs_updated_idx, a range scan) whose
 * version was written by a transaction at or after $2 — the previous tick's snapshot xmin: every
 * transaction below it had ended before that tick, so the tick saw its rows. A transaction that
 * commits late (it began long ago, so its updated_at = now() is old) is still caught as long as
 * $1 reaches back to its start: the caller keeps $1 at the oldest open transaction's start, read
 * here from pg_stat_activity (`oldest`; a role sees the start of its own role's sessions only,
 * or all with pg_read_all_stats). Subtransactions are covered (a subxid is above its top
 * transaction's id). Up to 101 runs are returned, with the full xid of their version (to drop
 * one the previous tick already named). Also returns the database clock, the snapshot's xmin
 * (the next horizon), and for each watched run a version of what its detail shows that does not
 * move updated_at: its step count (durable_steps_pkey, index-only) and its live progress.
 * No locks; read only; never assigns a transaction id.
 */
const LIVE_TICK = statement(
  'live_tick',
  `
WITH x AS (SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin,
                  pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax)
SELECT now() AS now, (SELECT xmin::text FROM x) AS horizon,
  (SELECT min(xact_start) FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend') AS oldest,
  (SELECT coalesce(json_agg(json_build_object('id', c.id, 'status', c.status, 'xid', c.xid::text)), '[]'::json) FROM (
     SELECT r.id, r.status, ${FULL_XMIN} AS xid FROM durable_runs r CROSS JOIN x
     WHERE r.updated_at >= $1::timestamptz AND ($2::bigint IS NULL OR ${FULL_XMIN} >= $2::bigint)
     ORDER BY r.updated_at LIMIT ${LIVE_CHANGED_LIMIT + 1}) c) AS changed,
  (SELECT coalesce(json_agg(json_build_object('id', r.id, 'v',
     r.status || ':' || r.updated_at::text || ':' || (SELECT count(*) FROM durable_steps s WHERE s.run_id = r.id) || ':' || md5(coalesce(r.progress::text, '')))), '[]'::json)
   FROM durable_runs r WHERE r.id = ANY($3::text[])) AS watched`,
);

export async function liveTick(store: Store, since: Date, horizon: string | null, watched: string[]): Promise<LiveTick> {
  if (store.sql.dialect === 'mysql') return mysql.liveTick(store, since, horizon, watched);
  const [row] = await store.sql.query<Record<string, unknown>>(LIVE_TICK, [since.toISOString(), horizon, watched]);
  const json = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v);
  const now = new Date(row.now as string);
  return {
    now,
    horizon: String(row.horizon),
    oldest: row.oldest ? new Date(row.oldest as string) : now,
    changed: json(row.changed) as LiveTick['changed'],
    watched: json(row.watched) as LiveTick['watched'],
  };
}
