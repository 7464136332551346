/**
 * The sweep of passed deadlines in one partition (distributed mode, store/partitions.ts):
 * SWEEP_DEADLINES (maintenance.ts) as a statement Citus sends whole to the partition's node. The
 * sweeper runs it on every partition at every sweep. The single-server statement inserts the runs'
 * history and their groups' end rows in CTEs and calls pg_notify in CTEs, which makes Citus run it in
 * parts; here one statement locks and ends the runs, moves their groups' counters and signals the
 * parents, and the rows follow as INSERT … VALUES statements (row-values.ts) in the same transaction,
 * the notifications last.
 */
import { statement } from './statement.js';
import { groupEndCounts, SIGNAL_CHANNEL, signalledRuns, WAKEUP_CHANNEL } from './sql-fragments.js';
import { insertValues, notifyAll } from './row-values.js';
import { DEADLINE_PARENTS, DEADLINE_RUNS } from './deadline-sql.js';
import { writeGroupEnds } from './partitioned-checkpoints.js';
import type { Store } from './store.js';

/**
 * SWEEP_DEADLINES of one partition without the rows it inserts and its notifications: $1 batch. A row
 * per run (`run`: ended FAILED, or `undo`, handed over to compensate) with what the history, the group
 * end rows and the wake-ups need, a row per group whose counters the ends moved (`group`: `before`, its
 * ends before them), and a row per parent signalled (`signal`, with its status and queue).
 */
const SWEEP_DEADLINES_IN_PARTITION = statement(
  'sweep_deadlines_in_partition',
  `
WITH ${DEADLINE_RUNS},
${groupEndCounts('ge', '(SELECT * FROM u WHERE NOT undo)')},
${signalledRuns('par', DEADLINE_PARENTS)}
SELECT 'run' AS kind, id, undo, parent_id, group_seq, group_index, status, error, deadline_at, queue, NULL::bigint AS before FROM u
UNION ALL SELECT 'group', run_id, NULL, NULL, seq, NULL, NULL, NULL, NULL, NULL, before FROM ge
UNION ALL SELECT 'signal', id, NULL, NULL, NULL, NULL, status, NULL, NULL, queue, NULL FROM par`,
);

interface SweepRow {
  kind: 'run' | 'group' | 'signal';
  id: string;
  undo: boolean | null;
  parent_id: string | null;
  group_seq: number | null;
  group_index: number | null;
  status: string | null;
  error: unknown;
  deadline_at: Date | string | null;
  queue: string | null;
  before: number | string | null;
}

/**
 * Ends up to `batch` runs of `store`'s partition past their deadline, as sweepDeadlines()
 * (maintenance.ts); the rows of the runs. The notifications (notifySignalled's for the parents, a
 * wake-up per queue of the runs handed over) are sent by the coordinator, when the transaction commits:
 * with many rows the inserts that follow run through the coordinator, and Citus then commits with
 * two-phase commit, which a node that notified cannot prepare.
 */
export async function sweepDeadlinesInPartition(store: Store, batch: number): Promise<Array<{ id: string; undo: boolean }>> {
  return store.sql.transaction(async (sql) => {
    const rows = await sql.query<SweepRow>(SWEEP_DEADLINES_IN_PARTITION, [batch]);
    const of = (kind: SweepRow['kind']) => rows.filter((r) => r.kind === kind);
    const runs = of('run');
    await writeGroupEnds(
      sql,
      runs.filter((r) => !r.undo),
      of('group').map((g) => ({ run_id: g.id, seq: g.group_seq!, before: g.before! })),
    );
    // SWEEP_DEADLINES' `hist`: the detail built by the database, so that the deadline reads as there.
    if (store.history && runs.length)
      await insertValues(
        sql,
        'INSERT INTO durable_run_events (run_id, kind, detail)',
        ['?', '?', `jsonb_build_object('reason', 'deadline', 'deadline', ?::timestamptz) || ?::jsonb`],
        runs.map((r) => [r.id, r.undo ? 'deadline_exceeded' : 'failed', r.deadline_at, r.undo ? '{"compensate":true}' : '{}']),
      );
    await notifyAll(sql, [
      ...of('signal').map((p): [string, string] => (p.status === 'WAITING' ? [WAKEUP_CHANNEL, p.queue!] : [SIGNAL_CHANNEL, p.id])),
      ...[...new Set(runs.filter((r) => r.undo).map((r) => r.queue!))].map((q): [string, string] => [WAKEUP_CHANNEL, q]),
    ]);
    return runs.map((r) => ({ id: r.id, undo: r.undo === true }));
  });
}
