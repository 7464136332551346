/**
 * Fork in distributed mode (Citus, see partitions.ts). The single-server FORK_RUN inserts the copy
 * with an INSERT … SELECT from the source's row, which Citus cannot send to a schema's shard (it
 * adds a filter on a distribution column those tables do not have). Here the copy is one transaction
 * in the source's partition, where the copy's id was minted (idBeside): read the source (locked
 * FOR SHARE, and only if no step before the fork point was undone: NOTHING_UNDONE_BEFORE, as
 * FORK_RUN), insert the copy from those values, copy its checkpoints before the fork point, write
 * its history, wake its queue.
 */
import { NOTHING_UNDONE_BEFORE } from './fork-plan.js';
import { statement } from './statement.js';
import { WAKEUP_CHANNEL } from './sql-fragments.js';
import { runStore, type Store } from './store.js';

/** Run $1 to fork from step $3 into run $2 (returned as id), if nothing before $3 was undone. */
const FORK_SOURCE_ROW = statement(
  'fork_source_row',
  `
SELECT $2::text AS id, workflow_name, queue, input::text AS input, priority, concurrency_key, context::text AS context,
       extract(epoch FROM (deadline_at - created_at)) * 1000 AS timeout_ms
FROM durable_runs src0 WHERE id = $1 AND ${NOTHING_UNDONE_BEFORE}
FOR SHARE`,
);

/** The copy, PENDING and due now, its deadline as long as its source's ($6 ms, null = none); $7 this app's version. */
const INSERT_FORKED_RUN = statement(
  'insert_forked_run',
  `
INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, deadline_at, app_version, concurrency_key, context)
VALUES ($1, $2, $3, 'PENDING', $4::jsonb, $5, now(), now() + $6::float8 * interval '1 millisecond', $7, $8, $9::jsonb)
RETURNING id`,
);

/** The checkpoints of run $1 before step $3, copied to run $2 (a cancelled wait waits again, as FORK_RUN). */
const COPY_FORKED_STEPS = statement(
  'copy_forked_steps',
  `
INSERT INTO durable_steps (run_id, seq, name, status, output, error, attempts, started_at, finished_at, compensation, compensates)
SELECT $2, s.seq, s.name, CASE s.status WHEN 'CANCELLED' THEN 'WAITING' ELSE s.status END, s.output, s.error, s.attempts,
       s.started_at, s.finished_at, s.compensation, s.compensates
FROM durable_steps s WHERE s.run_id = $1 AND s.seq < $3::int`,
);

/** The copy's history row ($1 copy, $2 source, $3 fork point, $4 actor), when $5 (history). */
const FORKED_HISTORY = statement(
  'forked_history',
  `
INSERT INTO durable_run_events (run_id, kind, detail)
SELECT $1, 'forked', jsonb_build_object('from', $2::text, 'fromStep', $3::int)
       || CASE WHEN $4::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('actor', $4::text) END
WHERE $5::boolean`,
);

const WAKE_QUEUE = statement('wake_queue', `SELECT pg_notify('${WAKEUP_CHANNEL}', $1) IS NULL AS notified`);

interface SourceRow {
  id: string;
  workflow_name: string;
  queue: string;
  input: string | null;
  priority: number;
  concurrency_key: string | null;
  context: string | null;
  timeout_ms: number | null;
}

/** FORK_RUN's work in distributed mode (see the file's comment); null if the source is gone or was undone before the fork point. */
export async function forkInPartition(
  store: Store,
  sourceId: string,
  newId: string,
  fromStep: number,
  appVersion: string | null,
  actor: string | null,
): Promise<{ id: string; copiedSteps: number } | null> {
  const s = runStore(store, sourceId);
  return s.sql.transaction(async (sql) => {
    const [src] = await sql.query<SourceRow>(FORK_SOURCE_ROW, [sourceId, newId, fromStep]);
    if (!src) return null;
    await sql.query(INSERT_FORKED_RUN, [
      newId,
      src.workflow_name,
      src.queue,
      src.input,
      src.priority,
      src.timeout_ms === null ? null : Number(src.timeout_ms),
      appVersion,
      src.concurrency_key,
      src.context,
    ]);
    const copiedSteps = await sql.execute(COPY_FORKED_STEPS, [sourceId, newId, fromStep]);
    await sql.query(FORKED_HISTORY, [newId, sourceId, fromStep, actor, store.history]);
    await sql.query(WAKE_QUEUE, [src.queue]);
    return { id: newId, copiedSteps };
  });
}
