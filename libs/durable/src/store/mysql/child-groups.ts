/** Groups of children (Durable.startChildren) on a MySQL-family database (see child-groups.ts). */
import {
  completionsOf,
  groupCountsOf,
  type ChildGroupChunk,
  type ChildGroupCompletions,
  type ChildGroupCounts,
  type ChildGroupOutcome,
} from '../child-group-rows.js';
import type { SqlClient } from '../sql-client.js';
import type { Store } from '../store.js';
import { WAKEUP_CHANNEL } from '../sql-fragments.js';
import { date, insertHistory, insertTags, json, jsonText, marks, NOW, utc } from './sql.js';

/** See START_GROUP_CHUNK in child-groups.ts: one transaction, fenced by the parent's epoch. */
export async function startGroupChunk(store: Store, c: ChildGroupChunk): Promise<{ held: boolean; inserted: number }> {
  return store.sql.transaction(async (sql) => {
    const [run] = await sql.query<{ cancel_requested_at: unknown; tags: unknown; order_at: unknown; context: unknown }>(
      `SELECT cancel_requested_at, tags, order_at, context FROM durable_runs WHERE id = ? AND lease_epoch = ? AND status = 'RUNNING' LOCK IN SHARE MODE`,
      [c.runId, c.epoch],
    );
    if (!run) return { held: false, inserted: 0 };
    await sql.execute(
      `INSERT INTO durable_child_groups (run_id, seq, workflow, total, created, created_at) VALUES (?, ?, ?, ?, ?, ${NOW})
       ON DUPLICATE KEY UPDATE created = greatest(created, VALUES(created))`,
      [c.runId, c.seq, c.workflow, c.total, c.from + c.ids.length],
    );
    const existing = c.ids.length
      ? new Set(
          (await sql.query<{ id: string }>(`SELECT id FROM durable_runs WHERE id IN (${marks(c.ids.length)})`, c.ids)).map((r) => r.id),
        )
      : new Set<string>();
    const fresh = c.ids.map((id, i) => ({ id, i })).filter((x) => !existing.has(x.id));
    const tags = c.tags ?? json<string[]>(run.tags) ?? [];
    const delay = c.delayMs ?? 0;
    if (fresh.length) {
      const orderAt = delay > 0 ? `${NOW} + INTERVAL ROUND(${Number(delay)} * 1000) MICROSECOND` : '?';
      const deadline = c.timeoutMs == null ? 'NULL' : `${NOW} + INTERVAL ROUND(${Number(c.timeoutMs)} * 1000) MICROSECOND`;
      await sql.execute(
        `INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, parent_id, group_seq,
                                   group_index, app_version, cancel_requested_at, concurrency_key, traceparent, tags, context, created_at, updated_at)
         VALUES ${fresh
           .map(
             () =>
               `(?, ?, ?, 'PENDING', ?, ?, ${NOW} + INTERVAL ROUND(? * 1000) MICROSECOND, ${orderAt}, ${deadline}, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${NOW}, ${NOW})`,
           )
           .join(', ')}`,
        fresh.flatMap(({ id, i }) => [
          id,
          c.workflow,
          c.queue,
          c.inputs[i],
          c.priority,
          delay,
          ...(delay > 0 ? [] : [utc(date(run.order_at))]),
          c.runId,
          c.seq,
          c.from + i,
          c.appVersion,
          utc(date(run.cancel_requested_at)),
          c.concurrencyKeys[i],
          c.traceparent,
          tags.length ? JSON.stringify(tags) : null,
          jsonText(run.context),
        ]),
      );
      await insertTags(
        sql,
        fresh.map(({ id }) => ({ id, tags })),
      );
      await insertHistory(
        sql,
        store.history,
        fresh.map(({ id }) => [id, 'created', { workflow: c.workflow, queue: c.queue, parent: c.runId, group: c.seq }]),
      );
      if (delay === 0) sql.notify?.(WAKEUP_CHANNEL, c.queue);
    }
    if (c.stepOutput !== null) {
      await sql.execute(
        `INSERT IGNORE INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
         VALUES (?, ?, ?, 'SUCCEEDED', ?, 1, ${NOW}, ${NOW})`,
        [c.runId, c.seq, c.stepName, c.stepOutput],
      );
    }
    return { held: true, inserted: fresh.length };
  });
}

/** See groupCounts() in child-groups.ts. */
export async function groupCounts(store: Store, runId: string, seqs: number[] | null): Promise<ChildGroupCounts[]> {
  if (seqs !== null && !seqs.length) return [];
  const rows = await store.sql.query<Record<string, unknown>>(
    `SELECT seq, workflow, total, created, ended, succeeded, failed, cancelled, wake_at FROM durable_child_groups
     WHERE run_id = ?${seqs === null ? '' : ` AND seq IN (${marks(seqs.length)})`} ORDER BY seq`,
    [runId, ...(seqs ?? [])],
  );
  return rows.map(groupCountsOf);
}

/** See groupPage() in child-groups.ts. */
export async function groupPage(store: Store, runId: string, seq: number, from: number, limit: number): Promise<ChildGroupOutcome[]> {
  const rows = await store.sql.query<Record<string, unknown>>(
    `SELECT group_index, id, status, output, error FROM durable_runs
     WHERE parent_id = ? AND group_seq = ? AND group_index >= ? AND group_index < ? ORDER BY group_index`,
    [runId, seq, from, from + limit],
  );
  return rows.map((r) => ({
    index: Number(r.group_index),
    id: r.id as string,
    status: r.status as string,
    output: json(r.output),
    error: json(r.error),
  }));
}

/** See groupCompletions() in child-groups.ts: one statement, so the counters and the ends come from one snapshot. */
export async function groupCompletions(
  store: Store,
  runId: string,
  seq: number,
  after: number,
  limit: number,
): Promise<ChildGroupCompletions> {
  const rows = await store.sql.query<Record<string, unknown>>(
    `WITH g AS (SELECT total, ended, ends FROM durable_child_groups WHERE run_id = ? AND seq = ?),
     e AS (
       SELECT o.ord, o.child_index, o.status AS end_status, o.error, r.id, r.output FROM g JOIN durable_group_ends o
       LEFT JOIN durable_runs r ON r.parent_id = o.run_id AND r.group_seq = o.seq AND r.group_index = o.child_index
       WHERE o.run_id = ? AND o.seq = ? AND o.ord > ? AND o.ord <= g.ends ORDER BY o.ord LIMIT ?)
     SELECT g.total, g.ended, g.ends, e.* FROM g LEFT JOIN e ON 1 = 1 ORDER BY e.ord`,
    [runId, seq, runId, seq, after, limit],
  );
  return completionsOf(rows, { output: json, error: json });
}

/** A run a statement ended, as countGroupEnds() reads it (a child of a group has group_seq and group_index). */
export interface EndedRun {
  parent_id: string | null;
  group_seq: number | string | null;
  group_index: number | string | null;
  status: string;
  /** The error it ended with (JSON text), if it failed. */
  error?: string | null;
}

/**
 * Counts the ends of group children (see groupEnds in sql-fragments.ts), inside the transaction
 * that ended them: each group's row is updated (locked) once, then read back under that lock, and
 * the ends are numbered after the group's `ends` (durable_group_ends, in commit order under that
 * lock). Returns the parents whose wait these ends complete (to be signalled), except those in `skip`.
 */
export async function countGroupEnds(sql: SqlClient, ended: EndedRun[], skip: ReadonlySet<string> = new Set()): Promise<string[]> {
  const groups = new Map<string, { runId: string; seq: number; n: number; s: number; f: number; c: number; ends: EndedRun[] }>();
  for (const e of ended) {
    if (e.parent_id === null || e.group_seq === null) continue;
    const k = `${e.group_seq}:${e.parent_id}`;
    const g = groups.get(k) ?? { runId: e.parent_id, seq: Number(e.group_seq), n: 0, s: 0, f: 0, c: 0, ends: [] };
    g.n++;
    g.ends.push(e);
    if (e.status === 'SUCCEEDED') g.s++;
    else if (e.status === 'FAILED') g.f++;
    else if (e.status === 'CANCELLED') g.c++;
    groups.set(k, g);
  }
  const crossed: string[] = [];
  for (const g of [...groups.values()].sort((a, b) => (a.runId === b.runId ? a.seq - b.seq : a.runId < b.runId ? -1 : 1))) {
    await sql.execute(
      `UPDATE durable_child_groups SET ended = ended + ?, succeeded = succeeded + ?, failed = failed + ?, cancelled = cancelled + ?, ends = ends + ?
       WHERE run_id = ? AND seq = ?`,
      [g.n, g.s, g.f, g.c, g.n, g.runId, g.seq],
    );
    const [row] = await sql.query<{ ended: number; wake_at: number; ends: number }>(
      `SELECT ended, wake_at, ends FROM durable_child_groups WHERE run_id = ? AND seq = ?`,
      [g.runId, g.seq],
    );
    if (!row) continue;
    const before = Number(row.ends) - g.n;
    const ends = g.ends.sort((a, b) => Number(a.group_index) - Number(b.group_index));
    await sql.execute(
      `INSERT INTO durable_group_ends (run_id, seq, ord, child_index, status, error) VALUES ${ends.map(() => '(?, ?, ?, ?, ?, ?)').join(', ')}
       ON DUPLICATE KEY UPDATE child_index = VALUES(child_index), status = VALUES(status), error = VALUES(error)`,
      ends.flatMap((e, i) => [g.runId, g.seq, before + i + 1, Number(e.group_index), e.status, e.error ?? null]),
    );
    if (skip.has(g.runId)) continue;
    const now = Number(row.ended);
    const at = Number(row.wake_at);
    if (at > 0 && now >= at && now - g.n < at) crossed.push(g.runId);
  }
  return [...new Set(crossed)];
}
