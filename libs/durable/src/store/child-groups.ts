/**
 * Groups of children (Durable.startChildren, a fan-out): children created in chunks, one
 * counter row per group (durable_child_groups) that every end of a child moves, and the group's
 * outcomes read in pages. See GROUP_ENDS in sql-fragments.ts for the counting side.
 */
import * as mysql from './mysql/child-groups.js';
import * as partitioned from './partitioned-children.js';
import { statement } from './statement.js';
import { DUE_BY, WAKEUP_CHANNEL } from './sql-fragments.js';
import { runStore, parsed, sameAsParent, type Store } from './store.js';
import {
  completionsOf,
  groupCountsOf,
  type ChildGroupChunk,
  type ChildGroupCompletions,
  type ChildGroupCounts,
  type ChildGroupOutcome,
} from './child-group-rows.js';

/**
 * One chunk of a group's children, fenced by the parent's epoch ($1 run, $2 epoch): the group row
 * is created by the first chunk and its `created` moved to the end of this chunk ($6 first index,
 * $7 ids); the children (PENDING, parent_id $1, group_seq $3, group_index = $6 + position) are
 * inserted, an id that exists already being kept (a chunk written again after a crash writes
 * nothing twice). The last chunk ($17 step output not null) records the parent's step $3 too, so
 * the group exists whole iff its step is recorded. Arrays: $7 ids, $15 inputs, $16 concurrency
 * keys. The rest is shared by the chunk: $4 workflow, $5 total, $8 queue, $9 priority, $10 delay
 * ms, $11 timeout ms, $12 app version, $13 traceparent, $14 tags (JSON text, or null: the parent's),
 * $18 step name, $19 history. Children carry the parent's context and take its place in the queue
 * (as START_CHILDREN). One wake-up for the queue.
 */
const START_GROUP_CHUNK = statement(
  'start_group_chunk',
  `
WITH run AS (
  SELECT id, cancel_requested_at, tags, order_at, context FROM durable_runs WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING' FOR SHARE),
grp AS (
  INSERT INTO durable_child_groups AS g (run_id, seq, workflow, total, created)
  SELECT $1, $3, $4, $5, $6 + cardinality($7::text[]) FROM run
  ON CONFLICT (run_id, seq) DO UPDATE SET created = greatest(g.created, excluded.created)
  RETURNING g.created),
child AS (
  INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, parent_id, group_seq,
                            group_index, app_version, cancel_requested_at, concurrency_key, traceparent, tags, context)
  SELECT c.id, $4, $8, 'PENDING', c.inp::jsonb, $9, now() + coalesce($10::float8, 0) * interval '1 millisecond',
         CASE WHEN $10::float8 > 0 THEN now() + $10::float8 * interval '1 millisecond' ELSE run.order_at END,
         now() + $11::float8 * interval '1 millisecond', $1, $3, $6 + c.ord::int - 1, $12, run.cancel_requested_at, c.ck, $13,
         CASE WHEN $14::text IS NULL THEN run.tags ELSE ARRAY(SELECT jsonb_array_elements_text($14::jsonb)) END, run.context
  FROM run, unnest($7::text[], $15::text[], $16::text[]) WITH ORDINALITY AS c(id, inp, ck, ord)
  ON CONFLICT (id) DO NOTHING
  RETURNING id, queue, available_at <= ${DUE_BY} AS due),
step AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
  SELECT $1, $3, $18, 'SUCCEEDED', $17::jsonb, 1, now(), now() FROM run WHERE $17::text IS NOT NULL
  ON CONFLICT (run_id, seq) DO NOTHING),
hist AS (
  INSERT INTO durable_run_events (run_id, kind, detail)
  SELECT id, 'created', jsonb_build_object('workflow', $4::text, 'queue', queue, 'parent', $1::text, 'group', $3::int) FROM child WHERE $19::boolean),
woken AS (SELECT count(pg_notify('${WAKEUP_CHANNEL}', q.queue)) AS n FROM (SELECT DISTINCT queue FROM child WHERE due) q)
SELECT (SELECT count(*) FROM run)::int AS held, (SELECT count(*) FROM child)::int AS inserted, (SELECT n FROM woken) AS woken`,
);

/** A run's groups ($2 seqs, or null: all of them), in seq order. Index: durable_child_groups_pkey. */
const GROUP_COUNTS = statement(
  'group_counts',
  `SELECT seq, workflow, total, created, ended, succeeded, failed, cancelled, wake_at FROM durable_child_groups
   WHERE run_id = $1 AND ($2::int[] IS NULL OR seq = ANY($2::int[])) ORDER BY seq`,
);

/**
 * A page of a group's outcomes in input order: children $3 ≤ group_index < $3 + $4, with their
 * status and, once ended, output or error. Index: durable_runs_group_idx.
 */
const GROUP_PAGE = statement(
  'group_page',
  `SELECT group_index, id, status, output, error FROM durable_runs
   WHERE parent_id = $1 AND group_seq = $2 AND group_index >= $3 AND group_index < $3 + $4
   ORDER BY group_index`,
);

/**
 * The ends of group ($1 run, $2 seq) after end $3, at most $4, in commit order, each with the
 * error it ended with and its child's output if the child still exists, and the group's counters — in one statement,
 * so the counters and the ends come from one snapshot. No row: the group does not exist. Indexes:
 * durable_child_groups_pkey, durable_group_ends_pkey, durable_runs_group_idx.
 */
const GROUP_COMPLETIONS = statement(
  'group_completions',
  `WITH g AS (SELECT total, ended, ends FROM durable_child_groups WHERE run_id = $1 AND seq = $2),
e AS (
  SELECT o.ord, o.child_index, o.status AS end_status, o.error, r.id, r.output FROM g, durable_group_ends o
  LEFT JOIN durable_runs r ON r.parent_id = $1 AND r.group_seq = $2 AND r.group_index = o.child_index
  WHERE o.run_id = $1 AND o.seq = $2 AND o.ord > $3 AND o.ord <= g.ends ORDER BY o.ord LIMIT $4)
SELECT g.total, g.ended, g.ends, e.* FROM g LEFT JOIN e ON true ORDER BY e.ord`,
);

/**
 * Writes one chunk of a group's children (see START_GROUP_CHUNK); held = false: the parent is no longer held under its epoch.
 * Distributed mode: the same in the parent's partition, as statements Citus sends whole to its node (partitioned-children.ts).
 */
export async function startGroupChunk(store: Store, c: ChildGroupChunk): Promise<{ held: boolean; inserted: number }> {
  if (store.sql.dialect === 'mysql') return mysql.startGroupChunk(store, c);
  sameAsParent(store, c.runId, c.ids.slice(0, 1));
  store = runStore(store, c.runId);
  if (store.partition !== undefined) return partitioned.startGroupChunkInPartition(store, c);
  const [row] = await store.sql.query<{ held: number; inserted: number }>(START_GROUP_CHUNK, [
    c.runId,
    c.epoch,
    c.seq,
    c.workflow,
    c.total,
    c.from,
    c.ids,
    c.queue,
    c.priority,
    c.delayMs,
    c.timeoutMs,
    c.appVersion,
    c.traceparent,
    c.tags === null ? null : JSON.stringify(c.tags),
    c.inputs,
    c.concurrencyKeys,
    c.stepOutput,
    c.stepName,
    store.history,
  ]);
  return { held: Number(row.held) === 1, inserted: Number(row.inserted) };
}

/** The counters of a run's groups (by the seq of the step that started each; null: all its groups). */
export async function groupCounts(store: Store, runId: string, seqs: number[] | null): Promise<ChildGroupCounts[]> {
  if (store.sql.dialect === 'mysql') return mysql.groupCounts(store, runId, seqs);
  store = runStore(store, runId);
  const rows = await store.sql.query<Record<string, unknown>>(GROUP_COUNTS, [runId, seqs]);
  return rows.map(groupCountsOf);
}

/** Outcomes of children from..from+limit-1 of a group, in input order (a child not ended yet has no output). */
export async function groupPage(store: Store, runId: string, seq: number, from: number, limit: number): Promise<ChildGroupOutcome[]> {
  if (store.sql.dialect === 'mysql') return mysql.groupPage(store, runId, seq, from, limit);
  store = runStore(store, runId);
  const rows = await store.sql.query<Record<string, unknown>>(GROUP_PAGE, [runId, seq, from, limit]);
  return rows.map((r) => ({
    index: Number(r.group_index),
    id: r.id as string,
    status: r.status as string,
    output: r.output ?? null,
    error: parsed(r.error) ?? null,
  }));
}

/** Ends of a group after end `after` (at most `limit`), in the order they committed, and the group's counters. */
export async function groupCompletions(
  store: Store,
  runId: string,
  seq: number,
  after: number,
  limit: number,
): Promise<ChildGroupCompletions> {
  if (store.sql.dialect === 'mysql') return mysql.groupCompletions(store, runId, seq, after, limit);
  store = runStore(store, runId);
  const rows = await store.sql.query<Record<string, unknown>>(GROUP_COMPLETIONS, [runId, seq, after, limit]);
  return completionsOf(rows, { output: (v) => v, error: parsed });
}
