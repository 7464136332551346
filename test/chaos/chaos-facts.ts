import type pg from 'pg';
import {
  BOUNCE_WORKFLOW,
  RATED_WORKFLOW,
  REPLY_WORKFLOW,
  SINGLE_WORKFLOW,
  SLOT_WORKFLOW,
  STARTER_WORKFLOW,
  TICK_SCHEDULE,
  UNDO_ERROR,
} from './chaos-config.js';
import { SINGLE_SERVER_TABLES, type DurableTables } from './chaos-tables.js';

/** Workflows of one step that counts no execution in test_step_executions (a SQL array). */
const ONE_STEP = `ARRAY[${[TICK_SCHEDULE, SLOT_WORKFLOW, RATED_WORKFLOW, STARTER_WORKFLOW, SINGLE_WORKFLOW, BOUNCE_WORKFLOW].map((w) => `'${w}'`).join(', ')}]`;

/**
 * Everything the report needs from the database after a chaos run, loaded in a few statements.
 * Times are ms since the epoch, from the database clock (same host as the driver's Date.now()).
 */
export interface ChaosFacts {
  /** The chaos runs (workflow "chaos") by status. */
  statuses: Record<string, number>;
  /** Their children (workflow "chaos.reply") by status. */
  childStatuses: Record<string, number>;
  /** Chaos runs without exactly one child, or whose child did not answer with the run's own id. */
  badReplies: Array<{ run: string; children: number; token: string | null }>;
  /** Children that did not get exactly one message, consumed once. */
  badMessages: Array<{ child: string; messages: number; consumed: number }>;
  /** SUCCEEDED chaos runs whose stream "steps" is not s0, s1, s2 at positions 0, 1, 2 (a chunk lost or written twice). */
  badStreams: Array<{ run: string; chunks: string }>;
  /** Runs by number of ledger rows (of the ledger step) and status: "<n>:<status>" → runs. */
  ledgerCounts: Array<{ n: number; status: string; runs: number }>;
  /** Runs with more than one ledger row of one step (ledger, or its compensation unledger). */
  ledgerDuplicates: Array<{ run: string; step: string; n: number }>;
  /** Runs that failed on purpose (input.undo) and compensated as expected: FAILED with UNDO_ERROR, s2/ledger/s1/s0 undone newest first, unledger once, each plain undo executed. */
  compensated: number;
  /** Runs whose compensations are not as expected (an undo run that did not compensate right, or another run that compensated). */
  badCompensations: Array<{ run: string; undo: boolean; status: string; undone: number[]; unledger: number; uncounted: number }>;
  /** Ledger rows whose pid differs from the pid recorded by the ledger checkpoint (two executions committed parts). */
  ledgerPidMismatches: number;
  /** SUCCEEDED runs without all their checkpoints (8 for a chaos run, 2 for its child) or without an execution of each plain step. */
  incompleteSucceeded: string[];
  /** Plain steps executed more than once: executions in order, and the pid of the accepted checkpoint. */
  duplicates: Array<{ run: string; step: string; executions: Array<{ pid: number; t: number }>; acceptedPid: number | null }>;
  /** Run history rows that matter for ownership, per run, in order. */
  history: Map<string, Array<{ kind: string; worker: string | null; t: number }>>;
  /** Writes attributed to a process: checkpoints of steps (their output has the pid), ledger rows, completions. */
  writes: Array<{ run: string; what: string; pid: number; t: number }>;
  /** Unfinished runs at the end, with their status. */
  unfinished: Array<{ id: string; status: string; owner: string | null }>;
  failed: Array<{ id: string; error: string }>;
  /** Runs of the schedule TICK_SCHEDULE, by slot: status and ledger rows. */
  ticks: Array<{ id: string; slot: string; status: string; ledger: number }>;
}

const ms = (col: string) => `(extract(epoch from ${col}) * 1000)::float8`;
const HISTORY_KINDS = `'claimed','woken','lease_expired','lease_lost','completed','failed','suspended','released','cancelled'`;

/** Reads the facts from `pool`, the durable tables as `t` names them (chaos-tables.ts). */
export async function loadFacts(pool: pg.Pool, t: DurableTables = SINGLE_SERVER_TABLES): Promise<ChaosFacts> {
  const q = async <T>(sql: string) => (await pool.query(sql)).rows as T[];
  const byStatus = async (workflow: string) =>
    Object.fromEntries(
      (
        await q<{ status: string; n: number }>(
          `SELECT status, count(*)::int AS n FROM ${t.runs} r WHERE workflow_name = '${workflow}' GROUP BY status`,
        )
      ).map((r) => [r.status, r.n]),
    );
  const statuses = await byStatus('chaos');
  const childStatuses = await byStatus(REPLY_WORKFLOW);
  const badReplies = await q<ChaosFacts['badReplies'][number]>(`
    SELECT r.id AS run, count(c.id)::int AS children, min(c.output ->> 'token') AS token
    FROM ${t.runs} r LEFT JOIN ${t.runs} c ON c.parent_id = r.id
    WHERE r.workflow_name = 'chaos' AND r.status = 'SUCCEEDED'
    GROUP BY r.id HAVING count(c.id) <> 1 OR min(c.output ->> 'token') IS DISTINCT FROM r.id
    ORDER BY r.id LIMIT 20`);
  const badMessages = await q<ChaosFacts['badMessages'][number]>(`
    SELECT c.id AS child, count(m.id)::int AS messages, count(m.consumed_at)::int AS consumed
    FROM ${t.runs} c LEFT JOIN ${t.messages} m ON m.run_id = c.id
    WHERE c.workflow_name = '${REPLY_WORKFLOW}' AND c.status = 'SUCCEEDED'
    GROUP BY c.id HAVING count(m.id) <> 1 OR count(m.consumed_at) <> 1
    ORDER BY c.id LIMIT 20`);
  const badStreams = await q<ChaosFacts['badStreams'][number]>(`
    SELECT r.id AS run, coalesce(string_agg(c.position || ':' || (c.value #>> '{}'), ',' ORDER BY c.position), '') AS chunks
    FROM ${t.runs} r LEFT JOIN ${t.streamChunks} c ON c.run_id = r.id AND c.stream = 'steps'
    WHERE r.workflow_name = 'chaos' AND r.status = 'SUCCEEDED'
    GROUP BY r.id HAVING coalesce(string_agg(c.position || ':' || (c.value #>> '{}'), ',' ORDER BY c.position), '') <> '0:s0,1:s1,2:s2'
    ORDER BY r.id LIMIT 20`);
  const ledgerCounts = await q<{ n: number; status: string; runs: number }>(`
    SELECT coalesce(l.n, 0) AS n, r.status, count(*)::int AS runs
    FROM ${t.runs} r LEFT JOIN (SELECT run_id, count(*)::int AS n FROM test_ledger WHERE step = 'ledger' GROUP BY run_id) l ON l.run_id = r.id
    WHERE r.workflow_name = 'chaos'
    GROUP BY 1, 2 ORDER BY 1, 2`);
  const ledgerDuplicates = await q<{ run: string; step: string; n: number }>(
    `SELECT run_id AS run, step, count(*)::int AS n FROM test_ledger GROUP BY run_id, step HAVING count(*) > 1 ORDER BY run_id LIMIT 100`,
  );
  const [{ n: ledgerPidMismatches }] = await q<{ n: number }>(`
    SELECT count(*)::int AS n FROM test_ledger l JOIN ${t.steps} s ON s.run_id = l.run_id AND s.output ->> 'step' = l.step
    WHERE (s.output ->> 'pid')::int IS DISTINCT FROM l.pid`);
  // Forward seqs of a chaos run: s0 0, s1 1, sleep 2, ledger 3, s2 4 → undone newest first: 4, 3, 1, 0.
  const undoRows = await q<{
    run: string;
    undo: boolean;
    status: string;
    error: string | null;
    undone: number[];
    unledger: number;
    uncounted: number;
  }>(`
    SELECT r.id AS run, (r.input ->> 'undo')::boolean IS TRUE AS undo, r.status, r.error ->> 'message' AS error,
      (SELECT coalesce(array_agg(s.compensates ORDER BY s.seq), '{}') FROM ${t.steps} s WHERE s.run_id = r.id AND s.compensates IS NOT NULL) AS undone,
      (SELECT count(*) FROM test_ledger l WHERE l.run_id = r.id AND l.step = 'unledger')::int AS unledger,
      (SELECT count(DISTINCT e.step) FROM test_step_executions e WHERE e.run_id = r.id AND e.step LIKE 'undo:%')::int AS uncounted
    FROM ${t.runs} r WHERE r.workflow_name = 'chaos'`);
  const expected = (r: (typeof undoRows)[number]) =>
    r.undo
      ? r.status === 'FAILED' && r.error === UNDO_ERROR && r.undone.join() === '4,3,1,0' && r.unledger === 1 && r.uncounted === 3
      : r.undone.length === 0 && r.unledger === 0 && r.uncounted === 0;
  const compensated = undoRows.filter((r) => r.undo && expected(r)).length;
  const badCompensations = undoRows
    .filter((r) => !expected(r))
    .slice(0, 20)
    .map(({ run, undo, status, undone, unledger, uncounted }) => ({ run, undo, status, undone, unledger, uncounted }));
  const incompleteSucceeded = (
    await q<{ id: string }>(`
    SELECT r.id FROM ${t.runs} r WHERE r.status = 'SUCCEEDED' AND (
      (SELECT count(*) FROM ${t.steps} s WHERE s.run_id = r.id AND s.status = 'SUCCEEDED') <> CASE WHEN r.workflow_name = 'chaos' THEN 8 WHEN r.workflow_name = ANY(${ONE_STEP}) THEN 1 ELSE 2 END OR
      (SELECT count(DISTINCT e.step) FROM test_step_executions e WHERE e.run_id = r.id) <> CASE WHEN r.workflow_name = 'chaos' THEN 3 WHEN r.workflow_name = ANY(${ONE_STEP}) THEN 0 ELSE 1 END)
    LIMIT 100`)
  ).map((r) => r.id);
  const duplicates = await q<ChaosFacts['duplicates'][number]>(`
    SELECT e.run_id AS run, e.step, json_agg(json_build_object('pid', e.pid, 't', ${ms('e.at')}) ORDER BY e.at) AS executions,
           (SELECT (s.output ->> 'pid')::int FROM ${t.steps} s WHERE s.run_id = e.run_id AND s.output ->> 'step' = e.step) AS "acceptedPid"
    FROM test_step_executions e GROUP BY e.run_id, e.step HAVING count(*) > 1`);
  const history = new Map<string, Array<{ kind: string; worker: string | null; t: number }>>();
  const rows = await q<{ run: string; kind: string; worker: string | null; t: number }>(`
    SELECT run_id AS run, kind, detail ->> 'worker' AS worker, ${ms('at')} AS t
    FROM ${t.runEvents} e WHERE kind IN (${HISTORY_KINDS}) ORDER BY run_id, id`);
  for (const r of rows) {
    let list = history.get(r.run);
    if (!list) history.set(r.run, (list = []));
    list.push({ kind: r.kind, worker: r.worker, t: r.t });
  }
  const writes = await q<ChaosFacts['writes'][number]>(`
    SELECT run_id AS run, 'checkpoint of ' || (output ->> 'step') AS what, (output ->> 'pid')::int AS pid, ${ms('finished_at')} AS t
    FROM ${t.steps} s WHERE output ? 'pid'
    UNION ALL
    SELECT run_id, 'ledger row', pid, ${ms('at')} FROM test_ledger l
    UNION ALL
    SELECT id, 'completion', (output ->> 'finishedBy')::int, ${ms('finished_at')} FROM ${t.runs} r WHERE status = 'SUCCEEDED'`);
  const unfinished = await q<{ id: string; status: string; owner: string | null }>(
    `SELECT id, status, lease_owner AS owner FROM ${t.runs} r WHERE status NOT IN ('SUCCEEDED','FAILED','CANCELLED') ORDER BY id LIMIT 50`,
  );
  const failed = await q<{ id: string; error: string }>(
    `SELECT id, coalesce(error ->> 'message', error::text) AS error FROM ${t.runs} r
     WHERE status = 'FAILED' AND (error ->> 'message') IS DISTINCT FROM '${UNDO_ERROR}' ORDER BY id LIMIT 20`,
  );
  const ticks = await q<ChaosFacts['ticks'][number]>(`
    SELECT r.id, r.input -> 'scheduledAt' ->> 'v' AS slot, r.status, (SELECT count(*)::int FROM test_ledger l WHERE l.run_id = r.id) AS ledger
    FROM ${t.runs} r WHERE r.schedule_id = '${TICK_SCHEDULE}' ORDER BY 2`);
  return {
    ticks,
    statuses,
    childStatuses,
    badReplies,
    badStreams,
    badMessages,
    ledgerCounts,
    ledgerDuplicates,
    ledgerPidMismatches,
    compensated,
    badCompensations,
    incompleteSucceeded,
    duplicates,
    history,
    writes,
    unfinished,
    failed,
  };
}
