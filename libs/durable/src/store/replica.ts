import type { Store } from './store.js';

/**
 * How far a read replica is behind: 0 when it has replayed everything it received, else the age
 * of the last transaction it replayed. On a server that is not a standby, `standby` is false (the
 * "replica" is a primary: reads are current, but its load is the primary's).
 */
const REPLICA_LAG_SQL = `
SELECT pg_is_in_recovery() AS standby,
       CASE WHEN NOT pg_is_in_recovery() THEN NULL
            WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
            ELSE greatest(0, extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000)::float8
       END AS lag_ms`;

export interface ReplicaLag {
  standby: boolean;
  /** Milliseconds behind its primary (null: not a standby, or nothing replayed yet). */
  lagMs: number | null;
}

export async function replicaLag(store: Store): Promise<ReplicaLag> {
  const [row] = await store.sql.query<{ standby: boolean; lag_ms: number | null }>(REPLICA_LAG_SQL);
  return { standby: row?.standby === true, lagMs: row?.lag_ms == null ? null : Math.round(row.lag_ms) };
}
