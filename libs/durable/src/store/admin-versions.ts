/** The admin API's view of app versions: which versions started the runs still in flight. */
import * as mysql from './mysql/admin-views.js';
import { rowsOfEach, type Store } from './store.js';
import { versionInFlightRow } from './admin-rows.js';
export type { VersionInFlightRow } from './admin-rows.js';
import type { VersionInFlightRow } from './admin-rows.js';

/**
 * Unfinished runs per app version (app_version, null for runs started without one), workflow and
 * status, with the oldest one's creation time. Index: durable_runs_status_created_idx (status =
 * ANY: a bitmap scan of the unfinished rows only, however many finished rows the table holds).
 */
export const VERSIONS_IN_FLIGHT = `
SELECT app_version, workflow_name, status, count(*)::float8 AS n, min(created_at) AS oldest
FROM durable_runs
WHERE status = ANY(ARRAY['PENDING','RUNNING','WAITING'])
GROUP BY app_version, workflow_name, status`;

export async function versionsInFlight(store: Store): Promise<VersionInFlightRow[]> {
  if (store.sql.dialect === 'mysql') return mysql.versionsInFlight(store);
  const rows = (await rowsOfEach(store, VERSIONS_IN_FLIGHT)).map(versionInFlightRow);
  if (store.layout.partitions === null) return rows;
  // Distributed mode: one row per partition for a version, workflow and status; added up into one.
  const merged = new Map<string, VersionInFlightRow>();
  for (const r of rows) {
    const key = JSON.stringify([r.appVersion, r.workflow, r.status]);
    const m = merged.get(key);
    if (!m) merged.set(key, { ...r });
    else {
      m.n += r.n;
      if (r.oldest < m.oldest) m.oldest = r.oldest;
    }
  }
  return [...merged.values()];
}
