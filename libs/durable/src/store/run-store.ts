import type { SqlClient } from './sql-client.js';
import * as SQL from './sql.js';

/** A step as recorded (loaded once per execution for replay). */
export interface RecordedStep {
  seq: number;
  name: string;
  /** WAITING: a durable wait (recv with a timeout) recorded its deadline and has not ended yet. */
  status: 'SUCCEEDED' | 'FAILED' | 'WAITING';
  output: unknown;
  error: unknown;
}

/** A run this worker has just claimed. */
export interface ClaimedRun {
  id: string;
  workflowName: string;
  input: unknown;
  epoch: number;
  attempt: number;
  parentId: string | null;
  deadlineAt: Date | null;
  /** available_at when claimed: the token of durable waits (see store/wait-sql.ts). */
  availableAt?: Date | null;
  steps: RecordedStep[];
}

export interface NewRun {
  id: string;
  workflowName: string;
  queue: string;
  input: string; // JSON text
  priority: number;
  runAt: Date | null;
  delayMs: number | null;
  timeoutMs: number | null;
  parentId: string | null;
  appVersion: string | null;
}

/** A finished step to checkpoint (output/error as JSON text). */
export interface StepCheckpoint {
  runId: string;
  epoch: number;
  seq: number;
  name: string;
  status: 'SUCCEEDED' | 'FAILED';
  output: string | null;
  error: string | null;
  attempts: number;
  durationMs: number;
}

/** The end of a run to record (output/error as JSON text). */
export interface RunEnd {
  runId: string;
  epoch: number;
  status: 'SUCCEEDED' | 'FAILED';
  output: string | null;
  error: string | null;
}

export type RunStatus = 'PENDING' | 'RUNNING' | 'WAITING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

export interface RunRow {
  id: string;
  workflow_name: string;
  queue: string;
  status: RunStatus;
  input: unknown;
  output: unknown;
  error: unknown;
  priority: number;
  available_at: Date;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  lease_epoch: number;
  attempt: number;
  parent_id: string | null;
  app_version: string | null;
  deadline_at: Date | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  updated_at: Date;
  steps: Array<RecordedStep & { attempts: number; startedAt: string | null; finishedAt: string }>;
}

/**
 * A SqlClient may carry the engine option `history` (default true): statements that change a
 * run's state then also write its history row (durable_run_events) in the same statement.
 */
export type HistorySqlClient = SqlClient & { history?: boolean };
/** The client, marked with the history switch (returns the same object). */
export function withHistory<T extends SqlClient>(sql: T, on: boolean): T {
  (sql as HistorySqlClient).history = on;
  return sql;
}
export const historyOn = (sql: SqlClient): boolean => (sql as HistorySqlClient).history !== false;

const toDate = (v: unknown): Date | null => (v == null ? null : v instanceof Date ? v : new Date(String(v)));
/** json columns may come back as text from some drivers; jsonb/json from pg and Prisma are parsed. */
const parsed = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;

/**
 * Typed access to the statements in sql.ts. Every method is one statement; `sql` is the pool
 * for the engine's own work, or a caller's transaction when a write must join it.
 */
export const runStore = {
  async schemaCheck(sql: SqlClient): Promise<string[]> {
    const [row] = await sql.query<Record<string, boolean>>(SQL.SCHEMA_CHECK);
    const names: Record<string, string> = {
      runs: 'table durable_runs',
      steps: 'table durable_steps',
      messages: 'table durable_messages',
      events: 'table durable_events',
      run_events: 'table durable_run_events',
      claim_idx: 'index durable_runs_claim_idx',
      wake_idx: 'index durable_runs_wake_idx',
    };
    return Object.keys(names).filter((k) => !row[k]).map((k) => names[k]);
  },

  /** Inserts a PENDING run; returns false when the id already existed. */
  async insertRun(sql: SqlClient, r: NewRun): Promise<boolean> {
    const rows = await sql.query(SQL.INSERT_RUN, [
      r.id, r.workflowName, r.queue, r.input, r.priority, r.runAt, r.delayMs, r.timeoutMs, r.parentId, r.appVersion, historyOn(sql),
    ]);
    return rows.length === 1;
  },

  /** Inserts a run already leased to `owner`; null when the id already existed. */
  async insertRunClaimed(sql: SqlClient, r: NewRun, owner: string, leaseMs: number): Promise<ClaimedRun | null> {
    const rows = await sql.query<{ id: string; lease_epoch: number; attempt: number; deadline_at: unknown; available_at: unknown }>(
      SQL.INSERT_RUN_CLAIMED,
      [r.id, r.workflowName, r.queue, r.input, r.priority, owner, leaseMs, r.timeoutMs, r.parentId, r.appVersion, historyOn(sql)],
    );
    if (!rows.length) return null;
    return {
      id: r.id, workflowName: r.workflowName, input: JSON.parse(r.input), epoch: rows[0].lease_epoch,
      attempt: rows[0].attempt, parentId: r.parentId, deadlineAt: toDate(rows[0].deadline_at),
      availableAt: toDate(rows[0].available_at), steps: [],
    };
  },

  /** Inserts many PENDING runs in one statement; returns the ids that were new. */
  async insertRuns(sql: SqlClient, runs: NewRun[], appVersion: string | null): Promise<Set<string>> {
    const rows = await sql.query<{ id: string }>(SQL.INSERT_RUNS, [
      runs.map((r) => r.id),
      runs.map((r) => r.workflowName),
      runs.map((r) => r.queue),
      runs.map((r) => r.input),
      runs.map((r) => r.priority),
      runs.map((r) => (r.runAt ? r.runAt.toISOString() : r.delayMs ? new Date(Date.now() + r.delayMs).toISOString() : null)),
      runs.map((r) => r.timeoutMs),
      runs.map((r) => r.parentId),
      appVersion,
      historyOn(sql),
    ]);
    return new Set(rows.map((r) => r.id));
  },

  async runIdentities(sql: SqlClient, ids: string[]): Promise<Map<string, { workflowName: string; status: RunStatus }>> {
    const rows = await sql.query<{ id: string; workflow_name: string; status: RunStatus }>(SQL.SELECT_RUN_IDENTITY, [ids]);
    return new Map(rows.map((r) => [r.id, { workflowName: r.workflow_name, status: r.status }]));
  },

  async claim(sql: SqlClient, queue: string, limit: number, owner: string, leaseMs: number, workflows: string[]): Promise<ClaimedRun[]> {
    const rows = await sql.query<Record<string, unknown>>(SQL.CLAIM, [queue, limit, owner, leaseMs, workflows, historyOn(sql)]);
    return rows.map((r) => ({
      id: r.id as string,
      workflowName: r.workflow_name as string,
      input: r.input,
      epoch: Number(r.lease_epoch),
      attempt: Number(r.attempt),
      parentId: (r.parent_id as string | null) ?? null,
      deadlineAt: toDate(r.deadline_at),
      availableAt: toDate(r.available_at),
      steps: parsed<RecordedStep[]>(r.steps),
    }));
  },

  /** Returns the ids whose lease was extended. */
  async heartbeat(sql: SqlClient, held: { id: string; epoch: number }[], leaseMs: number): Promise<Set<string>> {
    const rows = await sql.query<{ id: string }>(SQL.HEARTBEAT, [held.map((h) => h.id), held.map((h) => h.epoch), leaseMs]);
    return new Set(rows.map((r) => r.id));
  },

  /** Fenced checkpoint of one step; false = the lease is lost (or the step already exists). */
  async insertStep(sql: SqlClient, step: StepCheckpoint): Promise<boolean> {
    return (await runStore.insertSteps(sql, [step])).size === 1;
  },




  /** Fenced checkpoints of many steps in one statement; returns the `${runId}:${seq}` keys written. */
  async insertSteps(sql: SqlClient, steps: StepCheckpoint[]): Promise<Set<string>> {
    const col = <K extends keyof StepCheckpoint>(k: K) => steps.map((s) => s[k]);
    const rows = await sql.query<{ run_id: string; seq: number }>(SQL.INSERT_STEPS, [
      col('runId'), col('epoch'), col('seq'), col('name'), col('status'), col('output'), col('error'), col('attempts'), col('durationMs'),
      historyOn(sql),
    ]);
    return new Set(rows.map((r) => `${r.run_id}:${r.seq}`));
  },

  /** Fenced ends of many runs in one statement; returns the ids ended. */
  async finishRuns(sql: SqlClient, ends: RunEnd[]): Promise<Set<string>> {
    const col = <K extends keyof RunEnd>(k: K) => ends.map((e) => e[k]);
    const rows = await sql.query<{ id: string }>(SQL.FINISH_RUNS, [col('runId'), col('epoch'), col('status'), col('output'), col('error'), historyOn(sql)]);
    return new Set(rows.map((r) => r.id));
  },

  async releaseRuns(sql: SqlClient, held: { id: string; epoch: number }[]): Promise<number> {
    if (!held.length) return 0;
    const rows = await sql.query<{ n: number }>(SQL.RELEASE_RUNS, [held.map((h) => h.id), held.map((h) => h.epoch), historyOn(sql)]);
    return rows.reduce((a, r) => a + Number(r.n), 0);
  },

  async sweepExpiredLeases(sql: SqlClient, batch: number): Promise<number> {
    const rows = await sql.query<{ n: number }>(SQL.SWEEP_EXPIRED_LEASES, [batch, historyOn(sql)]);
    return rows.reduce((a, r) => a + Number(r.n), 0);
  },

  async sweepDeadlines(sql: SqlClient, batch: number): Promise<string[]> {
    return (await sql.query<{ id: string }>(SQL.SWEEP_DEADLINES, [batch, historyOn(sql)])).map((r) => r.id);
  },

  async sweepRetention(sql: SqlClient, olderThanMs: number, batch: number): Promise<number> {
    const [row] = await sql.query<{ n: number }>(SQL.SWEEP_RETENTION, [olderThanMs, batch]);
    return Number(row?.n ?? 0);
  },

  async getRun(sql: SqlClient, id: string): Promise<RunRow | null> {
    const [row] = await sql.query<RunRow>(SQL.SELECT_RUN, [id]);
    if (!row) return null;
    row.steps = parsed(row.steps);
    return row;
  },

  async getResult(sql: SqlClient, id: string): Promise<{ status: RunStatus; output: unknown; error: unknown } | null> {
    const [row] = await sql.query<{ status: RunStatus; output: unknown; error: unknown }>(SQL.SELECT_RUN_RESULT, [id]);
    return row ?? null;
  },

  async status(sql: SqlClient, id: string): Promise<RunStatus | null> {
    const [row] = await sql.query<{ status: RunStatus }>(SQL.SELECT_RUN_STATUS, [id]);
    return row?.status ?? null;
  },

  /** true if the run was unfinished and is now CANCELLED (its descendants too, unless cascade is false). */
  async cancel(sql: SqlClient, id: string, cascade = true): Promise<boolean> {
    return (await runStore.cancelTree(sql, id, cascade)).includes(id);
  },

  /** Cancels a run (and, with cascade, its unfinished descendants); returns every id it cancelled. */
  async cancelTree(sql: SqlClient, id: string, cascade: boolean): Promise<string[]> {
    return (await sql.query<{ id: string }>(SQL.CANCEL_RUN, [id, historyOn(sql), cascade])).map((r) => r.id);
  },

  /** true if the run was CANCELLED/FAILED and is now PENDING again (with the descendants cancelled with it, if cascade). */
  async resume(sql: SqlClient, id: string, cascade = true): Promise<boolean> {
    return (await sql.query<{ id: string }>(SQL.RESUME_RUN, [id, historyOn(sql), cascade])).some((r) => r.id === id);
  },
};
