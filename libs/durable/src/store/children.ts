/** Child workflows: creating them with the parent's checkpoint, in one fenced statement. */
import * as mysql from './mysql/children.js';
import * as partitioned from './partitioned-children.js';
import { statement } from './statement.js';
import { DUE_BY, WAKEUP_CHANNEL } from './sql-fragments.js';
import { runStore, parsed, sameAsParent, type Store } from './store.js';
import type { NewRun } from './rows.js';

/**
 * Durable.startChild (every call made in the same tick, e.g. a Promise.all fan-out, in one
 * statement): create the child runs (PENDING, parent_id = $1) and checkpoint the parent's steps,
 * fenced by the parent's epoch: a child exists iff its step is recorded. Arrays, one element per
 * child: $3 seq, $4 step name, $5 child id, $6 workflow, $7 queue, $8 input, $9 priority,
 * $10 delay ms, $11 timeout ms, $12 step output, $15 concurrency key, $16 traceparent (the parent's
 * execution span: the child's spans join the parent's trace), $17 tags (a JSON array of strings as
 * text, or null: the parent's tags); $13 app version, $14 history. A child carries its parent's context (engine option `context`).
 * An existing child id of the same workflow is adopted (idempotent start); of another workflow,
 * nothing is written for it and `conflicts` names it. One wake-up per queue. A parent being cancelled
 * with compensation (a startChild that was in flight when the cancel came) passes the request on:
 * the child is cancelled with compensation too (it has nothing to undo yet, so it ends at once).
 * A child takes its parent's place in the queue (order_at, see QUEUE_ORDER in leases.ts): ahead of
 * the runs not started yet, for which its parent's slot may be waiting. A delayed child is placed when it is due.
 */
const START_CHILDREN = statement(
  'start_children',
  `
WITH run AS (
  SELECT id, cancel_requested_at, tags, order_at, context FROM durable_runs WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING' FOR SHARE),
c AS (
  SELECT * FROM unnest($3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::int[], $10::float8[], $11::float8[], $12::text[],
                       $15::text[], $16::text[], $17::text[])
    AS c(seq, step, id, wf, q, inp, pr, delay_ms, timeout_ms, out, ck, tp, tg)
  WHERE EXISTS (SELECT 1 FROM run)),
other AS (SELECT c.seq, r.workflow_name FROM c JOIN durable_runs r ON r.id = c.id WHERE r.workflow_name <> c.wf),
ok AS (SELECT * FROM c WHERE c.seq NOT IN (SELECT seq FROM other)),
child AS (
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, parent_id, app_version,
                            cancel_requested_at, concurrency_key, traceparent, tags, context)
  SELECT id, wf, q, 'PENDING', inp::jsonb, pr, now() + coalesce(delay_ms, 0) * interval '1 millisecond',
         CASE WHEN delay_ms > 0 THEN now() + delay_ms * interval '1 millisecond' ELSE (SELECT order_at FROM run) END,
         now() + timeout_ms * interval '1 millisecond', $1, $13, (SELECT cancel_requested_at FROM run), ck, tp,
         CASE WHEN tg IS NULL THEN (SELECT tags FROM run) ELSE ARRAY(SELECT jsonb_array_elements_text(tg::jsonb)) END,
         (SELECT context FROM run)
  FROM ok
  ON CONFLICT (id) DO NOTHING
  RETURNING id, workflow_name, queue, available_at <= ${DUE_BY} AS due),
step AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
  SELECT $1, seq, step, 'SUCCEEDED', out::jsonb, 1, now(), now() FROM ok
  ON CONFLICT (run_id, seq) DO NOTHING
  RETURNING seq),
hist AS (
  INSERT INTO durable_run_events (run_id, kind, detail)
  SELECT id, 'created', jsonb_build_object('workflow', workflow_name, 'queue', queue, 'parent', $1::text) FROM child WHERE $14::boolean),
woken AS (SELECT count(pg_notify('${WAKEUP_CHANNEL}', q.queue)) AS n FROM (SELECT DISTINCT queue FROM child WHERE due) q)
SELECT (SELECT count(*) FROM run)::int AS held,
       (SELECT coalesce(json_agg(json_build_object('seq', seq, 'workflow', workflow_name)), '[]'::json) FROM other) AS conflicts,
       (SELECT n FROM woken) AS woken`,
);

/**
 * Creates child runs and records the parent's steps; `conflicts` names children whose id belongs to another workflow.
 * Distributed mode: the same in the parent's partition, as statements Citus sends whole to its node (partitioned-children.ts).
 */
export async function startChildren(
  store: Store,
  a: {
    runId: string;
    epoch: number;
    appVersion: string | null;
    /** inheritTags: the child carries the parent's tags (it was started without its own). */
    children: Array<{ seq: number; name: string; child: NewRun; output: string; inheritTags: boolean }>;
  },
): Promise<{ held: boolean; conflicts: Array<{ seq: number; workflow: string }> }> {
  if (store.sql.dialect === 'mysql') return mysql.startChildren(store, a);
  sameAsParent(
    store,
    a.runId,
    a.children.map((c) => c.child.id),
  );
  store = runStore(store, a.runId);
  if (store.partition !== undefined) return partitioned.startChildrenInPartition(store, a);
  const c = a.children;
  const [row] = await store.sql.query<{ held: number; conflicts: unknown }>(START_CHILDREN, [
    a.runId,
    a.epoch,
    c.map((x) => x.seq),
    c.map((x) => x.name),
    c.map((x) => x.child.id),
    c.map((x) => x.child.workflowName),
    c.map((x) => x.child.queue),
    c.map((x) => x.child.input),
    c.map((x) => x.child.priority),
    c.map((x) => x.child.delayMs),
    c.map((x) => x.child.timeoutMs),
    c.map((x) => x.output),
    a.appVersion,
    store.history,
    c.map((x) => x.child.concurrencyKey),
    c.map((x) => x.child.traceparent ?? null),
    c.map((x) => (x.inheritTags ? null : JSON.stringify(x.child.tags))),
  ]);
  return { held: Number(row.held) === 1, conflicts: parsed<Array<{ seq: number; workflow: string }>>(row.conflicts) };
}
