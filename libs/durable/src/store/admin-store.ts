import type { SqlClient } from './sql-client.js';
import * as SQL from './admin-sql.js';
import type { RunStatus } from './run-store.js';

export { RUN_STATUSES, COUNT_CAP, DETAIL_LIMITS, CLIP_BYTES, type SortKey, type SortOrder } from './admin-sql.js';

/** Validated filter of the runs list (null = no filter). */
export interface RunFilter {
  statuses: RunStatus[] | null;
  workflows: string[] | null;
  queues: string[] | null;
  createdFrom: Date | null;
  createdTo: Date | null;
  finishedFrom: Date | null;
  finishedTo: Date | null;
  idPrefix: string | null;
  parentId: string | null;
}

export interface RunListItem {
  id: string;
  workflowName: string;
  queue: string;
  status: RunStatus;
  priority: number;
  attempt: number;
  parentId: string | null;
  appVersion: string | null;
  leaseOwner: string | null;
  errorMessage: string | null;
  stepCount: number;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  updatedAt: string;
  availableAt: string;
  deadlineAt: string | null;
}

export interface RunDetailRow {
  run: Record<string, unknown>;
  steps: Array<Record<string, unknown>>;
  messages: Array<Record<string, unknown>>;
  events: Array<Record<string, unknown>>;
  history: Array<Record<string, unknown>>;
  children: Array<Record<string, unknown>>;
  totals: { steps: number; messages: number; events: number; history: number; children: number };
  dbNow: string;
}

export interface StatsRows {
  dbNow: string;
  active: Array<{ workflow: string; queue: string; status: RunStatus; n: number; oldestDue: string | null; expired: number }>;
  finished: Array<{ workflow: string; queue: string; status: RunStatus; n: number }>;
  perMinute: Array<{ workflow: string; queue: string; minute: string; started: number; succeeded: number; failed: number; cancelled: number }>;
  currentMinute: string;
}

/** Dates come back as Date (pg, Prisma) or as text inside json: always ISO strings out. */
export const iso = (v: unknown): string | null => (v == null ? null : new Date(v as string).toISOString());
const parsed = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;

/** `abc` → `abc%` with LIKE's wildcards and escape character taken literally. */
export const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

function filterParams(f: RunFilter, withStatus: boolean): unknown[] {
  const d = (x: Date | null) => (x ? x.toISOString() : null);
  const p: unknown[] = withStatus ? [f.statuses] : [];
  p.push(f.workflows, f.queues, d(f.createdFrom), d(f.createdTo), d(f.finishedFrom), d(f.finishedTo), f.idPrefix === null ? null : likePrefix(f.idPrefix), f.parentId);
  return p;
}

/** Typed access to admin-sql.ts; every method is one statement. */
export const adminStore = {
  async listRuns(sql: SqlClient, f: RunFilter, sort: SQL.SortKey, order: SQL.SortOrder, after: { at: Date; id: string } | null, limit: number): Promise<RunListItem[]> {
    const rows = await sql.query<Record<string, unknown>>(SQL.LIST_RUNS[`${sort}_${order}`], [
      ...filterParams(f, true), after ? after.at.toISOString() : null, after ? after.id : null, limit,
    ]);
    return rows.map((r) => ({
      id: r.id as string,
      workflowName: r.workflow_name as string,
      queue: r.queue as string,
      status: r.status as RunStatus,
      priority: Number(r.priority),
      attempt: Number(r.attempt),
      parentId: (r.parent_id as string | null) ?? null,
      appVersion: (r.app_version as string | null) ?? null,
      leaseOwner: (r.lease_owner as string | null) ?? null,
      errorMessage: (r.error_message as string | null) ?? null,
      stepCount: Number(r.step_count),
      createdAt: iso(r.created_at)!,
      startedAt: iso(r.started_at),
      finishedAt: iso(r.finished_at),
      updatedAt: iso(r.updated_at)!,
      availableAt: iso(r.available_at)!,
      deadlineAt: iso(r.deadline_at),
    }));
  },

  /** Runs per status for the filter (its status part ignored), each capped at `cap` + 1. */
  async countByStatus(sql: SqlClient, f: RunFilter, cap: number): Promise<Record<RunStatus, number>> {
    const [row] = await sql.query<Record<RunStatus, number>>(SQL.COUNT_RUNS_BY_STATUS, [...filterParams(f, false), cap]);
    return Object.fromEntries(SQL.RUN_STATUSES.map((s) => [s, Number(row?.[s] ?? 0)])) as Record<RunStatus, number>;
  },

  async runDetail(sql: SqlClient, id: string): Promise<RunDetailRow | null> {
    const [r] = await sql.query<Record<string, unknown>>(SQL.SELECT_RUN_DETAIL, [id]);
    if (!r) return null;
    const list = (k: string) => parsed<Array<Record<string, unknown>>>(r[k]) ?? [];
    const steps = list('steps').map((s) => ({ ...s, startedAt: iso(s.startedAt), finishedAt: iso(s.finishedAt), durationMs: s.durationMs == null ? null : Math.round(Number(s.durationMs) * 1000) / 1000 }));
    const messages = list('messages').map((m) => ({ ...m, createdAt: iso(m.createdAt), consumedAt: iso(m.consumedAt) }));
    const events = list('events').map((e) => ({ ...e, updatedAt: iso(e.updatedAt) }));
    const history = list('history').map((h) => ({ ...h, at: iso(h.at) }));
    const children = list('children').map((c) => ({ ...c, createdAt: iso(c.createdAt), finishedAt: iso(c.finishedAt) }));
    const run = {
      id: r.id,
      workflowName: r.workflow_name,
      queue: r.queue,
      status: r.status,
      input: r.input ?? null,
      output: r.output ?? null,
      error: r.error ?? null,
      priority: Number(r.priority),
      attempt: Number(r.attempt),
      leaseOwner: r.lease_owner ?? null,
      leaseExpiresAt: iso(r.lease_expires_at),
      leaseEpoch: Number(r.lease_epoch),
      parentId: r.parent_id ?? null,
      appVersion: r.app_version ?? null,
      deadlineAt: iso(r.deadline_at),
      availableAt: iso(r.available_at),
      createdAt: iso(r.created_at),
      startedAt: iso(r.started_at),
      finishedAt: iso(r.finished_at),
      updatedAt: iso(r.updated_at),
    };
    return {
      run, steps, messages, events, history, children, dbNow: iso(r.db_now)!,
      totals: { steps: Number(r.steps_total), messages: Number(r.messages_total), events: Number(r.events_total), history: Number(r.history_total), children: Number(r.children_total) },
    };
  },

  async runSummary(sql: SqlClient, id: string): Promise<{ id: string; workflowName: string; status: RunStatus; updatedAt: string } | null> {
    const [r] = await sql.query<Record<string, unknown>>(SQL.SELECT_RUN_SUMMARY, [id]);
    return r ? { id: r.id as string, workflowName: r.workflow_name as string, status: r.status as RunStatus, updatedAt: iso(r.updated_at)! } : null;
  },

  async forkSource(sql: SqlClient, id: string): Promise<{ workflowName: string; queue: string; nextSeq: number } | null> {
    const [r] = await sql.query<Record<string, unknown>>(SQL.SELECT_FORK_SOURCE, [id]);
    return r ? { workflowName: r.workflow_name as string, queue: r.queue as string, nextSeq: Number(r.next_seq) } : null;
  },

  /** Creates run `newId` from `sourceId`; null if the source vanished meanwhile. */
  async fork(sql: SqlClient, sourceId: string, newId: string, fromStep: number, appVersion: string | null, history: boolean): Promise<{ id: string; copiedSteps: number } | null> {
    const [r] = await sql.query<{ id: string; copied: number }>(SQL.FORK_RUN, [sourceId, newId, fromStep, appVersion, history]);
    return r ? { id: r.id, copiedSteps: Number(r.copied) } : null;
  },

  async stats(sql: SqlClient, windowMinutes: number): Promise<StatsRows> {
    const [active, finished, perMinute, [now]] = await Promise.all([
      sql.query<Record<string, unknown>>(SQL.STATS_ACTIVE),
      sql.query<Record<string, unknown>>(SQL.STATS_FINISHED, [windowMinutes]),
      sql.query<Record<string, unknown>>(SQL.STATS_PER_MINUTE),
      sql.query<Record<string, unknown>>(SQL.SELECT_NOW),
    ]);
    return {
      dbNow: iso(now.db_now)!,
      currentMinute: iso(now.minute)!,
      active: active.map((r) => ({
        workflow: r.workflow_name as string, queue: r.queue as string, status: r.status as RunStatus, n: Number(r.n),
        oldestDue: iso(r.oldest_due), expired: Number(r.expired),
      })),
      finished: finished.map((r) => ({ workflow: r.workflow_name as string, queue: r.queue as string, status: r.status as RunStatus, n: Number(r.n) })),
      perMinute: perMinute.map((r) => ({
        workflow: r.workflow_name as string, queue: r.queue as string, minute: iso(r.minute)!,
        started: Number(r.started), succeeded: Number(r.succeeded), failed: Number(r.failed), cancelled: Number(r.cancelled),
      })),
    };
  },
};
