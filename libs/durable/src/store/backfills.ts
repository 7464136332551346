/**
 * Backfills (workflow/backfill.ts): whether a control message (pause, resume) waits for a backfill's
 * run — read inside its batch's transaction — and the backfills the admin API lists, by their
 * progress event.
 */
import * as mysql from './mysql/backfills.js';
import { statement } from './statement.js';
import { rowsOfEach, runStore, parsed, toDate, type Store } from './store.js';

/** The topic of a backfill's control messages, and the event key of its progress. */
export const BACKFILL_CONTROL_TOPIC = 'durable.backfill.control';
export const BACKFILL_PROGRESS_KEY = 'durable.backfill';

/** Is a message on topic $2 waiting for run $1? (durable_messages_pending_idx) */
const PENDING_MESSAGE = statement(
  'pending_message',
  `SELECT EXISTS (SELECT 1 FROM durable_messages WHERE run_id = $1 AND topic = $2 AND consumed_at IS NULL) AS pending`,
);

/**
 * The newest $2 backfills: runs with a progress event (key $1), with their run's status. The events
 * table has no index on its key: it is read whole, which suits the few events apps publish; a
 * backfill's event is one row however many batches it has.
 */
const LIST_BACKFILLS = statement(
  'list_backfills',
  `
SELECT r.id, r.workflow_name, r.status, r.created_at, r.finished_at, e.value AS progress, e.updated_at
FROM durable_events e JOIN durable_runs r ON r.id = e.run_id
WHERE e.key = $1
ORDER BY r.created_at DESC, r.id
LIMIT $2`,
);

/** A backfill as the admin API lists it. */
export interface BackfillRow {
  runId: string;
  workflowName: string;
  status: string;
  createdAt: Date;
  finishedAt: Date | null;
  /** The latest progress event (codec form). */
  progress: unknown;
  updatedAt: Date;
}

export async function pendingMessage(store: Store, runId: string, topic: string): Promise<boolean> {
  if (store.sql.dialect === 'mysql') return mysql.pendingMessage(store, runId, topic);
  store = runStore(store, runId);
  const [row] = await store.sql.query<{ pending: boolean }>(PENDING_MESSAGE, [runId, topic]);
  return row?.pending === true;
}

export async function listBackfills(store: Store, limit: number): Promise<BackfillRow[]> {
  const rows =
    store.sql.dialect === 'mysql'
      ? await mysql.listBackfills(store, BACKFILL_PROGRESS_KEY, limit)
      : await rowsOfEach(store, LIST_BACKFILLS, [BACKFILL_PROGRESS_KEY, limit]);
  // Distributed mode: each partition's newest, then the newest of those (the statement's order: created_at DESC, id).
  if (store.layout.partitions !== null)
    rows.sort((a, b) => toDate(b.created_at)!.getTime() - toDate(a.created_at)!.getTime() || (a.id! < b.id! ? -1 : a.id! > b.id! ? 1 : 0));
  return rows.slice(0, limit).map((r) => ({
    runId: r.id as string,
    workflowName: r.workflow_name as string,
    status: r.status as string,
    createdAt: toDate(r.created_at)!,
    finishedAt: toDate(r.finished_at),
    progress: r.progress == null ? null : parsed(r.progress),
    updatedAt: toDate(r.updated_at)!,
  }));
}
