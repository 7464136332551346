/**
 * Starting children in the parent's partition (distributed mode, store/partitions.ts): START_CHILDREN
 * (children.ts) and START_GROUP_CHUNK (child-groups.ts) as statements Citus sends whole to the
 * partition's node. The single-server statements lock the parent and insert the children, the
 * parent's step, the group row and the history in CTEs, which makes Citus run a statement in parts
 * (each part on the node, its rows copied through the coordinator, two-phase commit). Here one
 * statement locks the parent (FOR SHARE, as there) and reads what the inserts need from it; the
 * rows follow as INSERT … VALUES statements (row-values.ts) in the same transaction, under that lock:
 * a child still exists if and only if its step is recorded, and only while the parent is held.
 * The wake-up is a statement without tables, which the coordinator sends when the transaction commits.
 */
import { statement } from './statement.js';
import { DUE_BY, WAKEUP_CHANNEL } from './sql-fragments.js';
import { insertHistoryRows, insertValues, type HistoryRow } from './row-values.js';
import { toDate, type Store } from './store.js';
import type { SqlClient } from './sql-client.js';
import type { NewRun } from './rows.js';
import type { ChildGroupChunk } from './child-group-rows.js';

/**
 * The parent $1 locked FOR SHARE if it is held under epoch $2 (START_CHILDREN's `run`), as a `run`
 * row with what its children inherit (context as text: passed back as it is stored), and, when it
 * is, an `other` row per child ($3 seq, $4 id, $5 workflow) whose id is a run of another workflow
 * (START_CHILDREN's `other`). No row: the parent is not held. A group passes no children.
 */
const LOCK_PARENT = statement(
  'lock_parent_in_partition',
  `
WITH run AS (
  SELECT id, cancel_requested_at, tags, order_at, context FROM durable_runs WHERE id = $1 AND lease_epoch = $2 AND status = 'RUNNING' FOR SHARE)
SELECT 'run' AS kind, NULL::int AS seq, NULL::text AS workflow, cancel_requested_at, tags, order_at, context::text AS context FROM run
UNION ALL
SELECT 'other', c.seq, r.workflow_name, NULL, NULL, NULL, NULL
FROM unnest($3::int[], $4::text[], $5::text[]) AS c(seq, id, wf) JOIN durable_runs r ON r.id = c.id
WHERE r.workflow_name <> c.wf AND EXISTS (SELECT 1 FROM run)`,
);

interface ParentRow {
  kind: 'run' | 'other';
  seq: number | null;
  workflow: string | null;
  cancel_requested_at: unknown;
  tags: string[] | null;
  order_at: unknown;
  context: string | null;
}

/** What a child takes from its parent (the `run` row). */
type Parent = Pick<ParentRow, 'cancel_requested_at' | 'tags' | 'order_at' | 'context'>;

/**
 * START_GROUP_CHUNK's group row: created by the first chunk, its `created` moved to the end of
 * this chunk ($5). Written only while the parent is held (after LOCK_PARENT).
 */
const UPSERT_GROUP = statement(
  'upsert_child_group_in_partition',
  `
INSERT INTO durable_child_groups AS g (run_id, seq, workflow, total, created) VALUES ($1, $2::int, $3, $4::int, $5::int)
ON CONFLICT (run_id, seq) DO UPDATE SET created = greatest(g.created, excluded.created)`,
);

/**
 * One wake-up per queue $1 of the children inserted that are due ($2 their available_at, as
 * START_CHILDREN's `woken`): a statement without tables, so Citus runs it on the coordinator, whose
 * clock gave the INSERT its now() too; sent when the transaction commits.
 */
const WAKE_DUE_QUEUES = statement(
  'wake_due_queues',
  `SELECT count(pg_notify('${WAKEUP_CHANNEL}', w.q)) AS n
FROM (SELECT DISTINCT q FROM unnest($1::text[], $2::timestamptz[]) AS c(q, at) WHERE at <= ${DUE_BY}) w`,
);

/** A child to insert: its run and its place in a group (null: a child of its own, Durable.startChild). */
interface ChildRow {
  id: string;
  workflow: string;
  queue: string;
  input: string;
  priority: number;
  delayMs: number | null;
  timeoutMs: number | null;
  concurrencyKey: string | null;
  traceparent: string | null;
  /** null: the parent's. */
  tags: string[] | null;
  groupSeq: number | null;
  groupIndex: number | null;
}

interface InsertedChild {
  id: string;
  workflow_name: string;
  queue: string;
  available_at: unknown;
}

/**
 * Inserts the children PENDING, parent_id `parentId`, as START_CHILDREN's and START_GROUP_CHUNK's
 * `child`: they carry the parent's context and cancel request, and its tags when they have none;
 * a child takes its parent's place in the queue (order_at) unless it is delayed. An id that exists
 * already is kept (ON CONFLICT DO NOTHING). Returns the children inserted.
 */
async function insertChildren(
  sql: SqlClient,
  parentId: string,
  parent: Parent,
  appVersion: string | null,
  children: readonly ChildRow[],
): Promise<InsertedChild[]> {
  if (!children.length) return [];
  return insertValues<InsertedChild>(
    sql,
    `INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, parent_id, group_seq,
  group_index, app_version, cancel_requested_at, concurrency_key, traceparent, tags, context)`,
    [
      '?',
      '?',
      '?',
      `'PENDING'`,
      '?::jsonb',
      '?::int',
      `now() + coalesce(?::float8, 0) * interval '1 millisecond'`,
      `CASE WHEN ?::float8 > 0 THEN now() + ?::float8 * interval '1 millisecond' ELSE ?::timestamptz END`,
      `now() + ?::float8 * interval '1 millisecond'`,
      '?',
      '?::int',
      '?::int',
      '?',
      '?::timestamptz',
      '?',
      '?',
      '?::text[]',
      '?::jsonb',
    ],
    children.map((c) => [
      c.id,
      c.workflow,
      c.queue,
      c.input,
      c.priority,
      c.delayMs,
      c.delayMs,
      c.delayMs,
      parent.order_at,
      c.timeoutMs,
      parentId,
      c.groupSeq,
      c.groupIndex,
      appVersion,
      parent.cancel_requested_at,
      c.concurrencyKey,
      c.traceparent,
      c.tags ?? parent.tags,
      parent.context,
    ]),
    'ON CONFLICT (id) DO NOTHING RETURNING id, workflow_name, queue, available_at',
  );
}

/** Records the parent's steps that started children (SUCCEEDED, with their output); a step recorded already stays as it is. */
async function insertParentSteps(sql: SqlClient, runId: string, steps: ReadonlyArray<{ seq: number; name: string; output: string }>) {
  if (!steps.length) return;
  await insertValues(
    sql,
    'INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)',
    ['?', '?::int', '?', `'SUCCEEDED'`, '?::jsonb', '1', 'now()', 'now()'],
    steps.map((s) => [runId, s.seq, s.name, s.output]),
    'ON CONFLICT (run_id, seq) DO NOTHING',
  );
}

/** The wake-ups of the queues of the children inserted that are due (WAKE_DUE_QUEUES). */
async function wakeDue(sql: SqlClient, inserted: readonly InsertedChild[]): Promise<void> {
  if (!inserted.length) return;
  await sql.query(WAKE_DUE_QUEUES, [inserted.map((r) => r.queue), inserted.map((r) => toDate(r.available_at)!.toISOString())]);
}

/** startChildren() (children.ts) in `store`'s partition, the parent's: the same rows, history, wake-ups and answer as START_CHILDREN. */
export async function startChildrenInPartition(
  store: Store,
  a: {
    runId: string;
    epoch: number;
    appVersion: string | null;
    children: Array<{ seq: number; name: string; child: NewRun; output: string; inheritTags: boolean }>;
  },
): Promise<{ held: boolean; conflicts: Array<{ seq: number; workflow: string }> }> {
  return store.sql.transaction(async (sql) => {
    const c = a.children;
    const rows = await sql.query<ParentRow>(LOCK_PARENT, [
      a.runId,
      a.epoch,
      c.map((x) => x.seq),
      c.map((x) => x.child.id),
      c.map((x) => x.child.workflowName),
    ]);
    const parent = rows.find((r) => r.kind === 'run');
    if (!parent) return { held: false, conflicts: [] };
    const conflicts = rows.filter((r) => r.kind === 'other').map((r) => ({ seq: Number(r.seq), workflow: r.workflow! }));
    const other = new Set(conflicts.map((x) => x.seq));
    const ok = c.filter((x) => !other.has(x.seq));
    const inserted = await insertChildren(
      sql,
      a.runId,
      parent,
      a.appVersion,
      ok.map(({ child, inheritTags }) => ({
        id: child.id,
        workflow: child.workflowName,
        queue: child.queue,
        input: child.input,
        priority: child.priority,
        delayMs: child.delayMs,
        timeoutMs: child.timeoutMs,
        concurrencyKey: child.concurrencyKey,
        traceparent: child.traceparent ?? null,
        tags: inheritTags ? null : child.tags,
        groupSeq: null,
        groupIndex: null,
      })),
    );
    await insertParentSteps(sql, a.runId, ok);
    await insertHistoryRows(
      sql,
      store.history,
      inserted.map((r): HistoryRow => [r.id, 'created', { workflow: r.workflow_name, queue: r.queue, parent: a.runId }]),
    );
    await wakeDue(sql, inserted);
    return { held: true, conflicts };
  });
}

/** startGroupChunk() (child-groups.ts) in `store`'s partition, the parent's: the same rows, history and wake-up as START_GROUP_CHUNK. */
export async function startGroupChunkInPartition(store: Store, c: ChildGroupChunk): Promise<{ held: boolean; inserted: number }> {
  return store.sql.transaction(async (sql) => {
    const [parent] = await sql.query<ParentRow>(LOCK_PARENT, [c.runId, c.epoch, [], [], []]);
    if (!parent) return { held: false, inserted: 0 };
    await sql.query(UPSERT_GROUP, [c.runId, c.seq, c.workflow, c.total, c.from + c.ids.length]);
    const inserted = await insertChildren(
      sql,
      c.runId,
      parent,
      c.appVersion,
      c.ids.map((id, i) => ({
        id,
        workflow: c.workflow,
        queue: c.queue,
        input: c.inputs[i],
        priority: c.priority,
        delayMs: c.delayMs,
        timeoutMs: c.timeoutMs,
        concurrencyKey: c.concurrencyKeys[i],
        traceparent: c.traceparent,
        tags: c.tags,
        groupSeq: c.seq,
        groupIndex: c.from + i,
      })),
    );
    if (c.stepOutput !== null) await insertParentSteps(sql, c.runId, [{ seq: c.seq, name: c.stepName, output: c.stepOutput }]);
    await insertHistoryRows(
      sql,
      store.history,
      inserted.map((r): HistoryRow => [r.id, 'created', { workflow: c.workflow, queue: r.queue, parent: c.runId, group: c.seq }]),
    );
    await wakeDue(sql, inserted);
    return { held: true, inserted: inserted.length };
  });
}
