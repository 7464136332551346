/** Checkpoints: what an execution writes for its run — finished steps and the run's end — fenced and batched. */
import * as mysql from './mysql/checkpoints.js';
import { statement } from './statement.js';
import { cancelActorDetail, deleteRunParts, groupEnds, history, signalRuns } from './sql-fragments.js';
import { ENDED_PARENTS, ENDED_RUNS, ENDED_UPDATE, HELD_ENDS } from './finish-sql.js';
import { perPartition, type Store } from './store.js';
import * as partitioned from './partitioned-checkpoints.js';
import type { RunEnd, StepCheckpoint } from './rows.js';
export type { EndResult } from './rows.js';
import type { EndResult } from './rows.js';

/** CTE `st`: the checkpoints to write, from eleven arrays starting at parameter $`first` (see INSERT_STEPS). */
const STEP_ROWS = (first: number) => {
  const p = (i: number, type: string) => `$${first + i}::${type}[]`;
  return `st AS (
  SELECT * FROM unnest(${p(0, 'text')}, ${p(1, 'int')}, ${p(2, 'int')}, ${p(3, 'text')}, ${p(4, 'text')}, ${p(5, 'text')}, ${p(6, 'text')},
                       ${p(7, 'int')}, ${p(8, 'float8')}, ${p(9, 'text')}, ${p(10, 'int')})
    AS st(run_id, epoch, seq, name, status, output, error, attempts, dur, compensation, compensates))`;
};

/**
 * The insert of the checkpoints in `st` whose run is in `l` (held: RUNNING under the checkpoint's
 * epoch, locked), but not one the same statement deletes (`l.gone`, FINISH_RUNS).
 */
const INSERT_STEP_ROWS = (held: string) => `
  INSERT INTO durable_steps (run_id, seq, name, status, output, error, attempts, started_at, finished_at, compensation, compensates)
  SELECT st.run_id, st.seq, st.name, st.status, st.output::jsonb, st.error::jsonb, st.attempts, now() - st.dur * interval '1 millisecond', now(),
         st.compensation::jsonb, st.compensates
  FROM st JOIN l ON l.id = st.run_id AND l.lease_epoch = st.epoch${held}
  ON CONFLICT (run_id, seq) DO NOTHING
  RETURNING run_id, seq, name, status, attempts, error`;

/** History of the failed steps among those written by `s`. */
const STEP_FAILED_HISTORY = (param: string) =>
  history(
    param,
    `SELECT run_id, 'step_failed', jsonb_build_object('seq', seq, 'step', name, 'attempts', attempts,
  'error', error -> 'message') FROM s WHERE status = 'FAILED'`,
  );

/**
 * Checkpoint finished steps, fenced: a step is inserted only while its run is RUNNING under its
 * epoch, and FOR SHARE holds the run rows until this statement commits, so a concurrent sweep or
 * claim either sees the step or makes the insert match nothing — never a lost or duplicate step.
 * Many steps of this worker's runs go in one statement (group commit; see WriteBatcher); a
 * transactional step sends its one checkpoint through its own transaction.
 * Run rows are locked in id order (as HEARTBEAT and FINISH_RUNS do): concurrent batches never
 * deadlock. lk finds them by primary key alone and l keeps the RUNNING ones: with the status test
 * in the lookup, a plan read every RUNNING run and rescanned the batch for each (most of the
 * statement's time once many runs are RUNNING). Arrays, one element per step: $1 run ids, $2 epochs, $3 seqs,
 * $4 names, $5 statuses, $6 outputs, $7 errors (json text), $8 attempts, $9 durations ms,
 * $10 compensations (json text: what undoes the step, recorded with it), $11 compensates (a
 * compensation step: the seq it undoes); $12 history. Returns the (run_id, seq) pairs written.
 */
const INSERT_STEPS = statement(
  'insert_steps',
  `
WITH ${STEP_ROWS(1)},
lk AS MATERIALIZED (
  SELECT r.id, r.lease_epoch, r.status FROM durable_runs r WHERE r.id = ANY($1::text[])
  ORDER BY r.id FOR SHARE),
l AS (SELECT id, lease_epoch FROM lk WHERE status = 'RUNNING'),
s AS (${INSERT_STEP_ROWS('')}),
hist AS (${STEP_FAILED_HISTORY('$12')})
SELECT run_id, seq FROM s`,
);

/** The history row of each run `u` ended ($17: history on). */
const END_HISTORY = history(
  '$17',
  `SELECT id, CASE status WHEN 'SUCCEEDED' THEN 'completed' WHEN 'CANCELLED' THEN 'cancelled' ELSE 'failed' END,
  CASE status WHEN 'FAILED' THEN jsonb_build_object('error', error -> 'message')
              WHEN 'CANCELLED' THEN jsonb_build_object('compensated', true) || ${cancelActorDetail('u.id')} END FROM u WHERE true`,
);

/**
 * End many runs of this worker in one statement (group commit): fenced by (id, epoch), rows locked in id
 * order, the runs' parents with them. lk locks both in one pass, whole before anything else (the
 * one-time filter in l, which keeps the ending runs still held under their epoch): a finished child
 * signals its parent, and a parent sorts before its children (their ids start with its id), so
 * locking the parent after the child deadlocked against a heartbeat or a checkpoint batch holding
 * both in id order (Postgres broke it after deadlock_timeout, 1 s; with short leases the worker lost
 * them all meanwhile). $18: the rows lk locks, the runs and their parents, each id once (a run's
 * parent_id never changes, so the claim's copy is exact; a plain array, so the lookup is an index scan
 * whatever the planner thinks of the batch). l carries what u writes, so u joins one CTE to the runs by
 * primary key: joined to t as well, the generic plan (which takes t for 10 rows and l for 1) rescanned t
 * once per run, rows formed by the square of the batch's size (much of the statement's time). Arrays: $1 ids,
 * $2 epochs, $3 statuses (SUCCEEDED, FAILED, or CANCELLED after compensating), $4 outputs, $5 errors
 * (json text); $6..$16 the last checkpoints of these runs, written with their end (the arrays of
 * INSERT_STEPS; empty when there are none); $17 history. A workflow that returns right after a step
 * sends that step's checkpoint here instead of on its own: one round trip and one commit less, and
 * the step is written exactly when the run held under its epoch is (ended or refused).
 * A run asked to cancel with compensation (cancel_requested_at) is not ended SUCCEEDED: it comes back
 * with ended = false (its checkpoints are written), and its execution compensates instead (the lock
 * makes the check see a cancel that committed meanwhile). A finished child signals its parent (unless
 * the parent ends in this same statement); a child of a group (Durable.startChildren) counts on its group's row instead, and
 * signals its parent only when that completes the parent's wait (groupEnds). $19 (booleans): the run is not kept once it succeeds
 * (@Workflow({ deleteOnSuccess })): instead of its update, d deletes it (its steps by cascade) with its
 * messages, events, history and stream chunks (each by an array of ids: index scans, whatever the plan), and its last checkpoints and its end's history are
 * not written (`gone`). Returns the runs held under their epoch: ended, or refused (ended = false).
 */
const FINISH_RUNS = statement(
  'finish_runs',
  `
WITH ${HELD_ENDS('$19', '$18')},
${STEP_ROWS(6)},
s AS (${INSERT_STEP_ROWS(' AND NOT l.gone')}),
shist AS (${STEP_FAILED_HISTORY('$17')}),
${ENDED_RUNS},
hist AS (${END_HISTORY}),
${groupEnds('ge', 'u')},
${signalRuns('par', ENDED_PARENTS)}
SELECT id, true AS ended, (SELECT n FROM par_n) AS signalled, false AS gone FROM u
UNION ALL
SELECT id, true, NULL, true FROM d
UNION ALL
SELECT id, false, NULL, false FROM l WHERE refused`,
);

/**
 * FINISH_RUNS for a batch in which every run is top-level (no parent to signal, no group to count
 * on), kept, and ends SUCCEEDED or FAILED: the same parameters, locks, fencing and writes, without the
 * CTEs that would find nothing to do for such runs (deleting runs not kept and their parts, ending the
 * waits of cancelled runs, counting group ends, signalling parents). Each of those CTEs is planned and
 * started on every call even when it matches no row, which is most of a small batch's cost: a batch of
 * one end took 0.49–0.62 ms of backend CPU with them and 0.40–0.41 ms without (`npm run drain-costs --
 * --batch 1 [--full-end]`, in bench/). Apps start top-level runs most of the time, so most ends take this form.
 */
const FINISH_PLAIN_RUNS = statement(
  'finish_plain_runs',
  `
WITH ${HELD_ENDS('$19', '$18')},
${STEP_ROWS(6)},
s AS (${INSERT_STEP_ROWS(' AND NOT l.gone')}),
shist AS (${STEP_FAILED_HISTORY('$17')}),
${ENDED_UPDATE},
hist AS (${END_HISTORY})
SELECT id, true AS ended, false AS gone FROM u
UNION ALL
SELECT id, false, false FROM l WHERE refused`,
);

/** An end FINISH_PLAIN_RUNS writes as FINISH_RUNS would: a top-level run, kept, neither cancelled nor (possibly) deleted. */
const plainEnd = (e: RunEnd) => e.parentId === null && e.delete !== true && e.status !== 'CANCELLED';

/**
 * After an end that deleted runs ($1): the rows of theirs that committed while that statement ran
 * (a send or a history row that locked the run first: FOR KEY SHARE, so the delete waited for it)
 * are not in its snapshot; this later statement's snapshot has them.
 */
const DELETE_LEFTOVERS = statement(
  'delete_leftovers',
  `
WITH ${deleteRunParts('= ANY($1::text[])')}
SELECT 1`,
);

/** Fenced checkpoints of many steps in one statement; returns the `${runId}:${seq}` keys written. */
export async function insertSteps(store: Store, steps: StepCheckpoint[]): Promise<Set<string>> {
  if (store.sql.dialect === 'mysql') return mysql.insertSteps(store, steps);
  const rows = await perPartition(
    store,
    steps,
    (c) => c.runId,
    (s, group) =>
      s.partition !== undefined
        ? partitioned.insertStepsInPartition(s, group)
        : s.sql.query<{ run_id: string; seq: number }>(INSERT_STEPS, [...stepColumns(group), s.history]),
  );
  return new Set(rows.map((r) => `${r.run_id}:${r.seq}`));
}

/** Fenced checkpoint of one step; false = the lease is lost (or the step already exists). */
export async function insertStep(store: Store, step: StepCheckpoint): Promise<boolean> {
  if (store.sql.dialect === 'mysql') return mysql.insertStep(store, step);
  return (await insertSteps(store, [step])).size === 1;
}

/**
 * Fenced ends of many runs in one statement, each with the checkpoints it carries (`steps`: its last
 * steps, written if and only if the run is held); runs missing from the answer were lost.
 */
export async function finishRuns(store: Store, ends: RunEnd[]): Promise<Map<string, EndResult>> {
  if (store.sql.dialect === 'mysql') return mysql.finishRuns(store, ends);
  const each = await perPartition(
    store,
    ends,
    (e) => e.runId,
    async (s, group) => [...(await finishRunsIn(s, group))],
  );
  return new Map(each);
}

async function finishRunsIn(store: Store, ends: RunEnd[]): Promise<Map<string, EndResult>> {
  const col = <K extends keyof RunEnd>(k: K) => ends.map((e) => e[k]);
  const rows =
    store.partition !== undefined
      ? await partitioned.finishRunsInPartition(store, ends)
      : await store.sql.query<{ id: string; ended: boolean; gone: boolean }>(ends.every(plainEnd) ? FINISH_PLAIN_RUNS : FINISH_RUNS, [
          col('runId'),
          col('epoch'),
          col('status'),
          col('output'),
          col('error'),
          ...stepColumns(ends.flatMap((e) => e.steps ?? [])),
          store.history,
          lockedIds(ends),
          col('delete').map((d) => d === true),
        ]);
  const gone = rows.filter((r) => r.gone).map((r) => r.id);
  // The end is written; leftovers it could not remove now stay only if this fails too (both rare).
  if (gone.length) await store.sql.execute(DELETE_LEFTOVERS, [gone]).catch(() => 0);
  return new Map(rows.map((r) => [r.id, r.ended ? 'ended' : 'cancelling']));
}

/** FINISH_RUNS' $18: the ending runs and their parents, each once (a parent may end in the same batch). */
function lockedIds(ends: RunEnd[]): string[] {
  const ids = new Set<string>();
  for (const e of ends) {
    ids.add(e.runId);
    if (e.parentId !== null) ids.add(e.parentId);
  }
  return [...ids];
}

/** The eleven array parameters of STEP_ROWS, one element per checkpoint. */
function stepColumns(steps: StepCheckpoint[]): unknown[] {
  const col = <K extends keyof StepCheckpoint>(k: K) => steps.map((s) => s[k] ?? null);
  return [
    col('runId'),
    col('epoch'),
    col('seq'),
    col('name'),
    col('status'),
    col('output'),
    col('error'),
    col('attempts'),
    col('durationMs'),
    col('compensation'),
    col('compensates'),
  ];
}
