/** Lifecycle hooks' cursors on a MySQL-family database (see hook-cursors.ts). */
import type { HookCursorRow, HookEventRow } from '../rows.js';
import type { Store } from '../store.js';
import { date, json, marks, NOW, NOW_PLUS_MS } from './sql.js';

/** See ensureHookCursor(): a new consumer starts at the newest history row. */
export async function ensureHookCursor(store: Store, consumer: string): Promise<void> {
  await store.sql.execute(
    `INSERT INTO durable_hook_cursors (consumer, last_event_id, updated_at)
     SELECT ?, coalesce(max(id), 0), ${NOW} FROM durable_run_events
     ON DUPLICATE KEY UPDATE consumer = consumer`,
    [consumer],
  );
}

/**
 * See readHookEvents(): takes or renews the consumer's lease, then reads the rows after its cursor,
 * stopping before the first row younger than settleMs (a row with a lower id may still commit).
 */
export async function readHookEvents(
  store: Store,
  a: { consumer: string; owner: string; leaseMs: number; settleMs: number; limit: number; kinds: string[] },
): Promise<{ held: boolean; upto: string | null; read: number; events: HookEventRow[] }> {
  return store.sql.transaction(async (sql) => {
    const held = await sql.execute(
      `UPDATE durable_hook_cursors SET owner = ?, lease_expires_at = ${NOW_PLUS_MS}, updated_at = ${NOW}
       WHERE consumer = ? AND (owner IS NULL OR owner = ? OR lease_expires_at < ${NOW})`,
      [a.owner, a.leaseMs, a.consumer, a.owner],
    );
    if (!held) return { held: false, upto: null, read: 0, events: [] };
    const [cursor] = await sql.query<{ last_event_id: bigint | number | string }>(
      'SELECT last_event_id FROM durable_hook_cursors WHERE consumer = ?',
      [a.consumer],
    );
    const rows = await sql.query<{
      id: bigint | number | string;
      run_id: string;
      kind: string;
      detail: unknown;
      at: unknown;
      young: unknown;
    }>(
      `SELECT id, run_id, kind, detail, at, at >= ${NOW} - INTERVAL ROUND(? * 1000) MICROSECOND AS young
       FROM durable_run_events WHERE id > ? ORDER BY id LIMIT ?`,
      [a.settleMs, String(cursor.last_event_id), a.limit],
    );
    const firstYoung = rows.findIndex((r) => Number(r.young) === 1);
    const batch = firstYoung < 0 ? rows : rows.slice(0, firstYoung);
    const wanted = batch.filter((r) => a.kinds.includes(r.kind));
    const runs = [...new Set(wanted.map((r) => r.run_id))];
    const workflows = new Map(
      runs.length
        ? (
            await sql.query<{ id: string; workflow_name: string }>(
              `SELECT id, workflow_name FROM durable_runs WHERE id IN (${marks(runs.length)})`,
              runs,
            )
          ).map((r) => [r.id, r.workflow_name])
        : [],
    );
    return {
      held: true,
      upto: batch.length ? String(batch[batch.length - 1].id) : null,
      read: batch.length,
      events: wanted.map((r) => ({
        id: String(r.id),
        runId: r.run_id,
        kind: r.kind,
        detail: json<Record<string, unknown>>(r.detail),
        at: date(r.at)!.toISOString(),
        workflow: workflows.get(r.run_id) ?? null,
      })),
    };
  });
}

export async function advanceHookCursor(store: Store, consumer: string, owner: string, lastId: string): Promise<void> {
  await store.sql.execute(
    `UPDATE durable_hook_cursors SET last_event_id = ?, updated_at = ${NOW} WHERE consumer = ? AND owner = ? AND last_event_id < ?`,
    [lastId, consumer, owner, lastId],
  );
}

export async function releaseHookCursor(store: Store, consumer: string, owner: string): Promise<void> {
  await store.sql.execute('UPDATE durable_hook_cursors SET owner = NULL, lease_expires_at = NULL WHERE consumer = ? AND owner = ?', [
    consumer,
    owner,
  ]);
}

/** See listHookCursors(): `behind` counted per consumer, up to the limit (MariaDB cannot correlate a derived table). */
export async function listHookCursors(store: Store, behindLimit: number): Promise<HookCursorRow[]> {
  const rows = await store.sql.query<Record<string, unknown>>(
    'SELECT consumer, last_event_id, owner, lease_expires_at, updated_at FROM durable_hook_cursors ORDER BY consumer',
  );
  const cursors: HookCursorRow[] = [];
  for (const r of rows) {
    const [b] = await store.sql.query<{ n: unknown }>(
      'SELECT count(*) AS n FROM (SELECT 1 FROM durable_run_events WHERE id > ? LIMIT ?) x',
      [String(r.last_event_id), behindLimit],
    );
    cursors.push({
      consumer: r.consumer as string,
      lastEventId: String(r.last_event_id),
      owner: (r.owner as string | null) ?? null,
      leaseExpiresAt: date(r.lease_expires_at),
      updatedAt: date(r.updated_at)!,
      behind: Number(b.n),
    });
  }
  return cursors;
}
