/** Checkpoints: what an execution writes for its run — finished steps and the run's end — fenced and batched. */
import { statement } from './statement.js';
import { history, signalRuns } from './sql-fragments.js';
import type { Store } from './store.js';
import type { RunEnd, StepCheckpoint } from './rows.js';

/**
 * Checkpoint finished steps, fenced: a step is inserted only while its run is RUNNING under its
 * epoch, and FOR SHARE holds the run rows until this statement commits, so a concurrent sweep or
 * claim either sees the step or makes the insert match nothing — never a lost or duplicate step.
 * Many steps of this worker's runs go in one statement (group commit; see WriteBatcher); a
 * transactional step sends its one checkpoint through its own transaction.
 * Run rows are locked in id order (as HEARTBEAT and FINISH_RUNS do): concurrent batches never
 * deadlock. Arrays, one element per step: $1 run ids, $2 epochs, $3 seqs, $4 names, $5 statuses,
 * $6 outputs, $7 errors (json text), $8 attempts, $9 durations ms, $10 compensations (json text:
 * what undoes the step, recorded with it), $11 compensates (a compensation step: the seq it undoes);
 * $12 history. Returns the (run_id, seq) pairs written.
 */
const INSERT_STEPS = statement(
  'insert_steps',
  `
WITH t AS (
  SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::float8[],
                       $10::text[], $11::int[])
    AS t(run_id, epoch, seq, name, status, output, error, attempts, dur, compensation, compensates)),
l AS (
  SELECT r.id, r.lease_epoch FROM durable_runs r
  WHERE r.id IN (SELECT run_id FROM t) AND r.status = 'RUNNING'
  ORDER BY r.id FOR SHARE),
s AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, error, attempts, started_at, finished_at, compensation, compensates)
  SELECT t.run_id, t.seq, t.name, t.status, t.output::jsonb, t.error::jsonb, t.attempts, now() - t.dur * interval '1 millisecond', now(),
         t.compensation::jsonb, t.compensates
  FROM t JOIN l ON l.id = t.run_id AND l.lease_epoch = t.epoch
  ON CONFLICT (run_id, seq) DO NOTHING
  RETURNING run_id, seq, name, status, attempts, error),
hist AS (${history(
    '$12',
    `SELECT run_id, 'step_failed', jsonb_build_object('seq', seq, 'step', name, 'attempts', attempts,
  'error', error -> 'message') FROM s WHERE status = 'FAILED'`,
  )})
SELECT run_id, seq FROM s`,
);

/**
 * End many runs of this worker in one statement (group commit): fenced by (id, epoch), rows locked in id
 * order. Arrays: $1 ids, $2 epochs, $3 statuses (SUCCEEDED, FAILED, or CANCELLED after compensating),
 * $4 outputs, $5 errors (json text); $6 history. A run asked to cancel with compensation
 * (cancel_requested_at) is not ended SUCCEEDED: it comes back with ended = false, and its execution
 * compensates instead (the lock makes the check see a cancel that committed meanwhile). A finished
 * child signals its parent (unless the parent ends in this same statement). Returns the runs held
 * under their epoch: ended, or refused (ended = false).
 */
const FINISH_RUNS = statement(
  'finish_runs',
  `
WITH t AS (
  SELECT * FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[]) AS t(id, epoch, status, output, error)),
l AS (
  SELECT r.id, (t.status = 'SUCCEEDED' AND r.cancel_requested_at IS NOT NULL) AS refused
  FROM durable_runs r JOIN t ON t.id = r.id AND r.lease_epoch = t.epoch
  WHERE r.status = 'RUNNING'
  ORDER BY r.id FOR NO KEY UPDATE OF r),
u AS (
  UPDATE durable_runs r
  SET status = t.status, output = t.output::jsonb, error = t.error::jsonb, finished_at = now(), updated_at = now(),
      lease_owner = NULL, lease_expires_at = NULL
  FROM t JOIN l ON l.id = t.id AND NOT l.refused WHERE r.id = t.id
  RETURNING r.id, r.parent_id, r.status, r.error),
hist AS (${history(
    '$6',
    `SELECT id, CASE status WHEN 'SUCCEEDED' THEN 'completed' WHEN 'CANCELLED' THEN 'cancelled' ELSE 'failed' END,
  CASE status WHEN 'FAILED' THEN jsonb_build_object('error', error -> 'message')
              WHEN 'CANCELLED' THEN jsonb_build_object('compensated', true) END FROM u WHERE true`,
  )}),
${signalRuns('par', 'SELECT parent_id FROM u WHERE parent_id IS NOT NULL AND parent_id NOT IN (SELECT id FROM t)')}
SELECT id, true AS ended, (SELECT n FROM par_n) AS signalled FROM u
UNION ALL
SELECT id, false, NULL FROM l WHERE refused`,
);

/** Fenced checkpoints of many steps in one statement; returns the `${runId}:${seq}` keys written. */
export async function insertSteps(store: Store, steps: StepCheckpoint[]): Promise<Set<string>> {
  const col = <K extends keyof StepCheckpoint>(k: K) => steps.map((s) => s[k] ?? null);
  const rows = await store.sql.query<{ run_id: string; seq: number }>(INSERT_STEPS, [
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
    store.history,
  ]);
  return new Set(rows.map((r) => `${r.run_id}:${r.seq}`));
}

/** Fenced checkpoint of one step; false = the lease is lost (or the step already exists). */
export async function insertStep(store: Store, step: StepCheckpoint): Promise<boolean> {
  return (await insertSteps(store, [step])).size === 1;
}

/**
 * How a run's end went: recorded; refused because the run is being cancelled with compensation
 * (it must compensate and end CANCELLED instead); or lost (the lease moved on).
 */
export type EndResult = 'ended' | 'cancelling' | 'lost';

/** Fenced ends of many runs in one statement; runs missing from the answer were lost. */
export async function finishRuns(store: Store, ends: RunEnd[]): Promise<Map<string, EndResult>> {
  const col = <K extends keyof RunEnd>(k: K) => ends.map((e) => e[k]);
  const rows = await store.sql.query<{ id: string; ended: boolean }>(FINISH_RUNS, [
    col('runId'),
    col('epoch'),
    col('status'),
    col('output'),
    col('error'),
    store.history,
  ]);
  return new Map(rows.map((r) => [r.id, r.ended ? 'ended' : 'cancelling']));
}
