/** The live feed's one statement per interval (admin/live-feed.ts): what changed, for every subscriber at once. */
import { statement } from './statement.js';
import type { Store } from './store.js';

/** Most changed runs one tick names; beyond it the tick says `many` (a client reloads what it shows). */
export const LIVE_CHANGED_LIMIT = 100;

/**
 * One tick of the live feed. $1 since (timestamptz; runs updated after it), $2 watched run ids (the
 * runs open in a detail view somewhere, at most a few hundred). Returns the database clock, up to
 * 101 runs updated since $1 (id, status; index durable_runs_updated_idx, a short range scan), and
 * for each watched run a version of what its detail shows that does not move updated_at: its step
 * count (durable_steps_pkey, index-only) and its live progress. No locks; read only.
 */
const LIVE_TICK = statement(
  'live_tick',
  `
SELECT now() AS now,
  (SELECT coalesce(json_agg(json_build_object('id', c.id, 'status', c.status)), '[]'::json) FROM (
     SELECT id, status FROM durable_runs WHERE updated_at > $1::timestamptz ORDER BY updated_at LIMIT ${LIVE_CHANGED_LIMIT + 1}) c) AS changed,
  (SELECT coalesce(json_agg(json_build_object('id', r.id, 'v',
     r.status || ':' || r.updated_at::text || ':' || (SELECT count(*) FROM durable_steps s WHERE s.run_id = r.id) || ':' || md5(coalesce(r.progress::text, '')))), '[]'::json)
   FROM durable_runs r WHERE r.id = ANY($2::text[])) AS watched`,
);

export interface LiveTick {
  now: Date;
  changed: Array<{ id: string; status: string }>;
  watched: Array<{ id: string; v: string }>;
}

export async function liveTick(store: Store, since: Date, watched: string[]): Promise<LiveTick> {
  const [row] = await store.sql.query<{ now: unknown; changed: unknown; watched: unknown }>(LIVE_TICK, [since.toISOString(), watched]);
  const json = (v: unknown) => (typeof v === 'string' ? JSON.parse(v) : v);
  return {
    now: new Date(row.now as string),
    changed: json(row.changed) as LiveTick['changed'],
    watched: json(row.watched) as LiveTick['watched'],
  };
}
