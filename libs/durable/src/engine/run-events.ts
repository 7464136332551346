import { errorText } from './error-text.js';
import * as W from '../store/wait-sql.js';
import type { SqlClient } from '../store/sql-client.js';
import type { ExecutionServices } from './services.js';

/** A row of a run's history (durable_run_events), as getRunEvents returns it. */
export interface RunEvent {
  /** Increasing within the database (bigint as a number). */
  id: number;
  /**
   * created, claimed, woken (claimed after waiting), suspended, step_failed, step_retried,
   * released (handed back at shutdown), lease_expired (swept), lease_lost (seen by the executor),
   * completed, failed, cancelled, resumed.
   */
  kind: string;
  detail: Record<string, unknown> | null;
  at: Date;
}

/**
 * Writes one history row on its own statement (rare paths: a retried step, a lost lease), without
 * waiting for it and without failing anything if it cannot be written. Off with `history: false`.
 */
export function recordRunEvent(services: ExecutionServices, runId: string, kind: string, detail: Record<string, unknown>): void {
  if (!services.options.history) return;
  services.sql.query(W.INSERT_RUN_EVENT, [runId, kind, JSON.stringify(detail)]).catch((err: Error) => {
    services.options.logger.debug?.(`run ${runId}: could not record history event "${kind}" (${errorText(err)})`);
  });
}

/** The history of a run, oldest first (at most `limit` rows). */
export async function getRunEvents(sql: SqlClient, runId: string, limit = 1000): Promise<RunEvent[]> {
  const rows = await sql.query<{ id: string; kind: string; detail: unknown; at: Date | string }>(W.SELECT_RUN_EVENTS, [runId, limit]);
  return rows.map((r) => ({
    id: Number(r.id),
    kind: r.kind,
    detail: (typeof r.detail === 'string' ? JSON.parse(r.detail) : r.detail) as Record<string, unknown> | null,
    at: r.at instanceof Date ? r.at : new Date(r.at),
  }));
}
