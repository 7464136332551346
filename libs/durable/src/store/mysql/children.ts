/** Child workflows and fork plans on a MySQL-family database (see children.ts and fork-plan.ts). */
import type { UndoneRow } from '../rows.js';
import type { NewRun } from '../rows.js';
import type { Store } from '../store.js';
import { wakeQueues } from './checkpoints.js';
import { date, insertHistory, insertTags, json, jsonText, marks, NOW, utc } from './sql.js';

/**
 * See startChildren() in children.ts: the children and the parent's steps in one transaction,
 * fenced by the parent's epoch (a child exists iff its step is recorded).
 */
export async function startChildren(
  store: Store,
  a: {
    runId: string;
    epoch: number;
    appVersion: string | null;
    children: Array<{ seq: number; name: string; child: NewRun; output: string; inheritTags: boolean }>;
  },
): Promise<{ held: boolean; conflicts: Array<{ seq: number; workflow: string }> }> {
  return store.sql.transaction(async (sql) => {
    const [run] = await sql.query<{ cancel_requested_at: unknown; tags: unknown; order_at: unknown; context: unknown }>(
      `SELECT cancel_requested_at, tags, order_at, context FROM durable_runs WHERE id = ? AND lease_epoch = ? AND status = 'RUNNING' LOCK IN SHARE MODE`,
      [a.runId, a.epoch],
    );
    if (!run || !a.children.length) return { held: run !== undefined, conflicts: [] };
    const ids = a.children.map((c) => c.child.id);
    const existing = new Map(
      (
        await sql.query<{ id: string; workflow_name: string }>(
          `SELECT id, workflow_name FROM durable_runs WHERE id IN (${marks(ids.length)})`,
          ids,
        )
      ).map((r) => [r.id, r.workflow_name]),
    );
    const conflicts = a.children
      .filter((c) => existing.has(c.child.id) && existing.get(c.child.id) !== c.child.workflowName)
      .map((c) => ({ seq: c.seq, workflow: existing.get(c.child.id)! }));
    const ok = a.children.filter((c) => !conflicts.some((x) => x.seq === c.seq));
    const fresh = ok.filter((c) => !existing.has(c.child.id));
    const cancelRequested = utc(date(run.cancel_requested_at));
    const parentOrder = utc(date(run.order_at));
    const parentTags = json<string[]>(run.tags);
    const tagsOf = (c: (typeof fresh)[number]) => (c.inheritTags ? parentTags : c.child.tags.length ? c.child.tags : null);
    if (fresh.length) {
      await sql.execute(
        `INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, parent_id, app_version,
                                   cancel_requested_at, concurrency_key, traceparent, tags, context, created_at, updated_at)
         VALUES ${fresh
           .map(
             (c) =>
               `(?, ?, ?, 'PENDING', ?, ?, ${NOW} + INTERVAL ROUND(? * 1000) MICROSECOND, ${
                 (c.child.delayMs ?? 0) > 0 ? `${NOW} + INTERVAL ROUND(? * 1000) MICROSECOND` : '?'
               }, ${c.child.timeoutMs == null ? 'NULL' : `${NOW} + INTERVAL ROUND(? * 1000) MICROSECOND`}, ?, ?, ?, ?, ?, ?, ?, ${NOW}, ${NOW})`,
           )
           .join(', ')}`,
        fresh.flatMap((c) => {
          const delay = c.child.delayMs ?? 0;
          const tags = tagsOf(c);
          return [
            c.child.id,
            c.child.workflowName,
            c.child.queue,
            c.child.input,
            c.child.priority,
            delay,
            delay > 0 ? delay : parentOrder,
            ...(c.child.timeoutMs == null ? [] : [c.child.timeoutMs]),
            a.runId,
            a.appVersion,
            cancelRequested,
            c.child.concurrencyKey,
            c.child.traceparent ?? null,
            tags && tags.length ? JSON.stringify(tags) : null,
            jsonText(run.context),
          ];
        }),
      );
      await insertTags(
        sql,
        fresh.map((c) => ({ id: c.child.id, tags: tagsOf(c) })),
      );
    }
    if (ok.length) {
      const seqs = ok.map((c) => c.seq);
      const recorded = new Set(
        (
          await sql.query<{ seq: number }>(`SELECT seq FROM durable_steps WHERE run_id = ? AND seq IN (${marks(seqs.length)})`, [
            a.runId,
            ...seqs,
          ])
        ).map((s) => Number(s.seq)),
      );
      const steps = ok.filter((c) => !recorded.has(c.seq));
      if (steps.length) {
        await sql.execute(
          `INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
           VALUES ${steps.map(() => `(?, ?, ?, 'SUCCEEDED', ?, 1, ${NOW}, ${NOW})`).join(', ')}`,
          steps.flatMap((c) => [a.runId, c.seq, c.name, c.output]),
        );
      }
    }
    await insertHistory(
      sql,
      store.history,
      fresh.map((c) => [c.child.id, 'created', { workflow: c.child.workflowName, queue: c.child.queue, parent: a.runId }]),
    );
    wakeQueues(
      sql,
      fresh.filter((c) => !c.child.delayMs).map((c) => c.child),
    );
    return { held: true, conflicts };
  });
}

/** See undoneSteps() in fork-plan.ts. */
export async function undoneSteps(store: Store, runId: string): Promise<UndoneRow[]> {
  const rows = await store.sql.query<{ seq: number; name: string; by_seq: number | null; by_name: string | null }>(
    `SELECT u.seq, u.name, c.seq AS by_seq, c.name AS by_name
     FROM durable_steps u
     LEFT JOIN durable_steps c ON c.run_id = u.run_id AND c.compensates = u.seq
     WHERE u.run_id = ? AND u.compensates IS NULL
       AND (c.seq IS NOT NULL
            OR (JSON_EXTRACT(u.compensation, '$.by') IS NOT NULL AND u.status = 'SUCCEEDED'
                AND EXISTS (SELECT 1 FROM durable_runs r WHERE r.id = ? AND r.cancel_requested_at IS NOT NULL)))
     ORDER BY u.seq`,
    [runId, runId],
  );
  return rows.map((r) => ({
    seq: Number(r.seq),
    step: r.name,
    undoneBy: r.by_seq == null ? null : { seq: Number(r.by_seq), step: String(r.by_name) },
  }));
}
