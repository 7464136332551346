/**
 * Checkpoints and run ends in one partition (distributed mode, store/partitions.ts): INSERT_STEPS and
 * FINISH_RUNS (checkpoints.ts) as statements Citus sends whole to the partition's node. The
 * single-server statements insert checkpoints, history and group end rows in CTEs, which makes Citus
 * run a statement in parts; here one statement locks, checks the epochs and changes the runs, and the
 * rows to insert follow as INSERT … VALUES statements (row-values.ts) in the same transaction, under
 * the locks the first one took: a checkpoint is still written if and only if its run is held.
 */
import { statement } from './statement.js';
import { groupEndCounts, SIGNAL_CHANNEL, signalledRuns, WAKEUP_CHANNEL } from './sql-fragments.js';
import { ENDED_PARENTS, ENDED_RUNS, HELD_ENDS } from './finish-sql.js';
import { insertHistoryRows, insertValues, notifyAll, type HistoryRow } from './row-values.js';
import type { Store } from './store.js';
import type { SqlClient } from './sql-client.js';
import type { RunEnd, StepCheckpoint } from './rows.js';

/** The runs $1 locked FOR SHARE in id order (INSERT_STEPS' lk): a sweep or claim then waits for the checkpoints. */
const LOCK_STEP_RUNS = statement(
  'lock_step_runs',
  `SELECT id, lease_epoch, status FROM durable_runs WHERE id = ANY($1::text[]) ORDER BY id FOR SHARE`,
);

/** Fenced checkpoints of `store`'s partition, as insertSteps() (checkpoints.ts): the (run_id, seq) pairs written. */
export async function insertStepsInPartition(store: Store, steps: StepCheckpoint[]): Promise<Array<{ run_id: string; seq: number }>> {
  return store.sql.transaction(async (sql) => {
    const runs = await sql.query<{ id: string; lease_epoch: number; status: string }>(LOCK_STEP_RUNS, [
      [...new Set(steps.map((s) => s.runId))],
    ]);
    const held = new Map(runs.filter((r) => r.status === 'RUNNING').map((r) => [r.id, Number(r.lease_epoch)]));
    return writeSteps(
      sql,
      store.history,
      steps.filter((s) => held.get(s.runId) === s.epoch),
    );
  });
}

/**
 * Inserts checkpoints whose runs the caller holds and has locked (ON CONFLICT DO NOTHING: a step
 * written already stays as it is), with a history row per failed step; returns those written.
 */
async function writeSteps(sql: SqlClient, history: boolean, steps: StepCheckpoint[]): Promise<Array<{ run_id: string; seq: number }>> {
  if (!steps.length) return [];
  const written = await insertValues<{ run_id: string; seq: number; name: string; status: string; attempts: number; error: unknown }>(
    sql,
    'INSERT INTO durable_steps (run_id, seq, name, status, output, error, attempts, started_at, finished_at, compensation, compensates)',
    [
      '?',
      '?::int',
      '?',
      '?',
      '?::jsonb',
      '?::jsonb',
      '?::int',
      `now() - ?::float8 * interval '1 millisecond'`,
      'now()',
      '?::jsonb',
      '?::int',
    ],
    steps.map((s) => [
      s.runId,
      s.seq,
      s.name,
      s.status,
      s.output,
      s.error,
      s.attempts,
      s.durationMs,
      s.compensation ?? null,
      s.compensates ?? null,
    ]),
    'ON CONFLICT (run_id, seq) DO NOTHING RETURNING run_id, seq, name, status, attempts, error',
  );
  await insertHistoryRows(
    sql,
    history,
    written
      .filter((s) => s.status === 'FAILED')
      .map((s): HistoryRow => [
        s.run_id,
        'step_failed',
        { seq: Number(s.seq), step: s.name, attempts: Number(s.attempts), error: messageOf(s.error) },
      ]),
  );
  return written;
}

/**
 * FINISH_RUNS (checkpoints.ts) of one partition, without the rows it inserts: $1..$5 and $6 (del)
 * as its $1..$5 and $19, $7 as its $18 (the runs and their parents to lock). Each row is a run
 * `ended` (with what the group end rows and the history need), `gone` (deleted), `refused` (asked to
 * cancel with compensation), or a `group` whose counters the ends moved (`before`: its ends before
 * them), or a parent these ends `signalled` (its status and queue: the notification is sent from the
 * coordinator at the end, since a worker node that sent one cannot take part in a two-phase commit,
 * which a bulk insert from arrays brings about; see row-values.ts).
 */
const FINISH_IN_PARTITION = statement(
  'finish_runs_in_partition',
  `
WITH ${HELD_ENDS('$6', '$7')},
${ENDED_RUNS},
${groupEndCounts('ge', 'u')},
${signalledRuns('par', ENDED_PARENTS)}
SELECT 'ended' AS kind, id, parent_id, status, error, group_seq, group_index, NULL::bigint AS before, NULL AS queue FROM u
UNION ALL SELECT 'gone', id, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM d
UNION ALL SELECT 'refused', id, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM l WHERE refused
UNION ALL SELECT 'group', run_id, NULL, NULL, NULL, seq, NULL, before, NULL FROM ge
UNION ALL SELECT 'signalled', id, NULL, status, NULL, NULL, NULL, NULL, queue FROM par`,
);

interface FinishRow {
  kind: 'ended' | 'gone' | 'refused' | 'group' | 'signalled';
  id: string;
  parent_id: string | null;
  status: string | null;
  error: unknown;
  group_seq: number | null;
  group_index: number | null;
  before: number | string | null;
  queue: string | null;
}

/** The latest actor who asked each of the runs $1 to cancel (cancelActorDetail in sql-fragments.ts, for many runs). */
const CANCEL_ACTORS = statement(
  'cancel_actors',
  `SELECT DISTINCT ON (run_id) run_id, detail -> 'actor' AS actor FROM durable_run_events
  WHERE run_id = ANY($1::text[]) AND kind = 'cancel_requested' AND detail ? 'actor' ORDER BY run_id, id DESC`,
);

const END_KIND = { SUCCEEDED: 'completed', FAILED: 'failed', CANCELLED: 'cancelled' } as const;

/** Fenced ends of `store`'s partition, as finishRuns() (checkpoints.ts): a row per run held under its epoch (ended, gone or refused). */
export async function finishRunsInPartition(store: Store, ends: RunEnd[]): Promise<Array<{ id: string; ended: boolean; gone: boolean }>> {
  const col = <K extends keyof RunEnd>(k: K) => ends.map((e) => e[k]);
  const locked = [...new Set(ends.flatMap((e) => (e.parentId === null ? [e.runId] : [e.runId, e.parentId])))];
  return store.sql.transaction(async (sql) => {
    const rows = await sql.query<FinishRow>(FINISH_IN_PARTITION, [
      col('runId'),
      col('epoch'),
      col('status'),
      col('output'),
      col('error'),
      col('delete').map((d) => d === true),
      locked,
    ]);
    const of = (kind: FinishRow['kind']) => rows.filter((r) => r.kind === kind);
    // The last checkpoints of the runs held and kept, under the locks the statement took.
    const kept = new Map(ends.map((e) => [e.runId, e.epoch]));
    const held = new Set([...of('ended'), ...of('refused')].map((r) => r.id));
    await writeSteps(
      sql,
      store.history,
      ends.flatMap((e) => e.steps ?? []).filter((s) => held.has(s.runId) && kept.get(s.runId) === s.epoch),
    );
    await writeGroupEnds(
      sql,
      of('ended'),
      of('group').map((g) => ({ run_id: g.id, seq: g.group_seq!, before: g.before! })),
    );
    const cancelled = of('ended').filter((r) => r.status === 'CANCELLED');
    const actors = cancelled.length
      ? new Map(
          (await sql.query<{ run_id: string; actor: unknown }>(CANCEL_ACTORS, [cancelled.map((r) => r.id)])).map((r) => [
            r.run_id,
            r.actor,
          ]),
        )
      : new Map<string, unknown>();
    await insertHistoryRows(
      sql,
      store.history,
      of('ended').map((r): HistoryRow => {
        const status = r.status as keyof typeof END_KIND;
        const detail =
          status === 'FAILED'
            ? { error: messageOf(r.error) }
            : status === 'CANCELLED'
              ? { compensated: true, ...(actors.has(r.id) ? { actor: actors.get(r.id) } : {}) }
              : null;
        return [r.id, END_KIND[status], detail];
      }),
    );
    await notifyAll(
      sql,
      of('signalled').map((r): [string, string] => (r.status === 'WAITING' ? [WAKEUP_CHANNEL, r.queue!] : [SIGNAL_CHANNEL, r.id])),
    );
    return [...of('ended'), ...of('gone'), ...of('refused')].map((r) => ({
      id: r.id,
      ended: r.kind !== 'refused',
      gone: r.kind === 'gone',
    }));
  });
}

/** A run of a child group (Durable.startChildren) that ended: its parent, group and index in it, how it ended. */
export interface EndedChild {
  parent_id: string | null;
  group_seq: number | null;
  group_index: number | null;
  status: string | null;
  error: unknown;
}

/**
 * The end rows (durable_group_ends) of the children of groups that ended (groupEndCounts in
 * sql-fragments.ts returned each group moved: its parent run, seq, and `before`, its ends before
 * these): numbered after `before`, in child index order, as groupEnds numbers them.
 */
export async function writeGroupEnds(
  sql: SqlClient,
  ended: readonly EndedChild[],
  groups: ReadonlyArray<{ run_id: string; seq: number; before: number | string }>,
): Promise<void> {
  const rows = groups.flatMap((g) =>
    ended
      .filter((e) => e.parent_id === g.run_id && e.group_seq === g.seq)
      .sort((a, b) => a.group_index! - b.group_index!)
      .map((e, i) => [
        g.run_id,
        g.seq,
        Number(g.before) + i + 1,
        e.group_index,
        e.status,
        e.error == null ? null : JSON.stringify(e.error),
      ]),
  );
  if (!rows.length) return;
  await insertValues(
    sql,
    'INSERT INTO durable_group_ends AS o (run_id, seq, ord, child_index, status, error)',
    ['?', '?::int', '?::int', '?::int', '?', '?::jsonb'],
    rows,
    'ON CONFLICT (run_id, seq, ord) DO UPDATE SET child_index = excluded.child_index, status = excluded.status, error = excluded.error',
  );
}

/** `error -> 'message'` of a stored error (jsonb), for history details. */
export function messageOf(error: unknown): unknown {
  const e = typeof error === 'string' ? (JSON.parse(error) as unknown) : error;
  return e !== null && typeof e === 'object' && 'message' in e ? (e as { message: unknown }).message : null;
}
