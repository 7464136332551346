/**
 * The claim and the sweep of expired leases in one partition (distributed mode, store/partitions.ts):
 * each a statement Citus sends whole to the partition's node (a router query), with the history
 * rows the single-server statements insert in a CTE written by a second statement in the same
 * transaction (store/row-values.ts).
 */
import { statement } from './statement.js';
import { CLAIM_HISTORY_AT, EXPIRED_LEASES, WAKEUP_CHANNEL } from './sql-fragments.js';
import { claimedRun, claimSql } from './claim-sql.js';
import { insertHistoryRows, notifyAll, type HistoryRow } from './row-values.js';
import type { Store } from './store.js';
import type { SqlClient } from './sql-client.js';
import type { ClaimedRun, ClaimRequest } from './rows.js';

/** CLAIM (leases.ts) of one partition, without its history: $1..$5 as CLAIM's; each row also has prev (the status the run had). */
const CLAIM_IN_PARTITION = statement('claim_in_partition', claimSql('', true));
/** CLAIM_VERSIONS of one partition: $7 → $6 (CLAIM_IN_PARTITION has no history parameter). */
const CLAIM_VERSIONS_IN_PARTITION = statement(
  'claim_versions_in_partition',
  claimSql(' AND (app_version IS NULL OR app_version = ANY($6::text[]))', true),
);

/** Claims up to `request.limit` due runs of `store`'s partition, as claim() (leases.ts). */
export async function claimInPartition(store: Store, request: ClaimRequest): Promise<ClaimedRun[]> {
  const { queue, limit, owner, leaseMs, workflows, versions = null } = request;
  const params = [queue, limit, owner, leaseMs, workflows, ...(versions ? [versions] : [])];
  return withHistory(store, async (sql) => {
    const rows = await sql.query<Record<string, unknown>>(versions ? CLAIM_VERSIONS_IN_PARTITION : CLAIM_IN_PARTITION, params);
    await insertClaimHistory(sql, store.history, owner, rows);
    return rows.map(claimedRun);
  });
}

/**
 * Writes the history of the runs a claim of `owner` took (PARTITION_CLAIM_END's rows): 'claimed', or
 * 'woken' for a WAITING run, at the time of the claim (CLAIM_HISTORY_AT).
 */
export function insertClaimHistory(sql: SqlClient, history: boolean, owner: string, rows: ReadonlyArray<Record<string, unknown>>) {
  return insertHistoryRows(
    sql,
    history,
    rows.map((r): HistoryRow => [
      r.id as string,
      r.prev === 'WAITING' ? 'woken' : 'claimed',
      { worker: owner, epoch: Number(r.lease_epoch), attempt: Number(r.attempt) },
    ]),
    CLAIM_HISTORY_AT,
  );
}

/**
 * SWEEP_EXPIRED_LEASES (leases.ts) of one partition, without its history and its wake-ups: those are
 * sent from the coordinator after the history rows (a worker node that sent one cannot take part in the
 * two-phase commit a bulk insert of history brings about; see row-values.ts).
 */
const SWEEP_IN_PARTITION = statement(
  'sweep_expired_leases_in_partition',
  `
WITH ${EXPIRED_LEASES}
SELECT id, queue, lease_owner, lease_epoch FROM u`,
);

/** Makes up to `batch` runs of `store`'s partition whose lease expired claimable again; returns how many. */
export async function sweepInPartition(store: Store, batch: number): Promise<number> {
  return withHistory(store, async (sql) => {
    const rows = await sql.query<{ id: string; queue: string; lease_owner: string | null; lease_epoch: number }>(SWEEP_IN_PARTITION, [
      batch,
    ]);
    await insertHistoryRows(
      sql,
      store.history,
      rows.map((r): HistoryRow => [r.id, 'lease_expired', { worker: r.lease_owner, epoch: Number(r.lease_epoch) }]),
    );
    await notifyAll(
      sql,
      [...new Set(rows.map((r) => r.queue))].map((q) => [WAKEUP_CHANNEL, q]),
    );
    return rows.length;
  });
}

/** `fn` in a transaction when it writes history too (the change and its history commit together), else on its own. */
export function withHistory<T>(store: Store, fn: (sql: SqlClient) => Promise<T>): Promise<T> {
  return store.history ? store.sql.transaction(fn) : fn(store.sql);
}
