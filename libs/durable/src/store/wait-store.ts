import { historyOn, type NewRun, type RunStatus } from './run-store.js';
import type { SqlClient } from './sql-client.js';
import * as W from './wait-sql.js';

/** One pending wait as RESOLVE_WAITS takes it. */
export interface WaitSpec {
  seq: number;
  kind: 'sleep' | 'recv' | 'child';
  name: string;
  /** recv: the topic; child: the child run id. */
  key: string | null;
  /** A timer not recorded yet: sleep length, or recv timeout (ms). */
  ms: number | null;
  /** A recorded wake time (sleep) or deadline (recv). */
  due: Date | null;
}

export interface ResolveResult {
  /** false: the execution no longer holds the run (lease lost, cancelled). */
  held: boolean;
  /** available_at as the statement saw it (the new token). */
  token: Date | null;
  /** Set when the run was suspended: WAITING until then, on this queue. */
  suspended: { until: Date; queue: string } | null;
  /** Steps written: resolved waits (SUCCEEDED) and newly recorded deadlines (WAITING). */
  steps: Array<{ seq: number; status: 'SUCCEEDED' | 'WAITING'; output: unknown }>;
}

const toDate = (v: unknown): Date | null => (v == null ? null : v instanceof Date ? v : new Date(String(v)));
const parsed = <T>(v: unknown): T => (typeof v === 'string' ? JSON.parse(v) : v) as T;

/** Typed access to the statements in wait-sql.ts; one statement per method. */
export const waitStore = {
  async resolveWaits(
    sql: SqlClient,
    a: { runId: string; epoch: number; token: Date | null; maySuspend: boolean; recheckMs: number; waits: WaitSpec[] },
  ): Promise<ResolveResult> {
    const w = a.waits;
    const [row] = await sql.query<Record<string, unknown>>(W.RESOLVE_WAITS, [
      a.runId, a.epoch, a.token, a.maySuspend && a.token !== null, a.recheckMs, historyOn(sql),
      w.map((x) => x.seq), w.map((x) => x.kind), w.map((x) => x.name), w.map((x) => x.key),
      w.map((x) => x.ms), w.map((x) => (x.due ? x.due.toISOString() : null)),
    ]);
    const until = toDate(row.suspended_until);
    return {
      held: Number(row.held) === 1,
      token: toDate(row.token),
      suspended: until ? { until, queue: String(row.queue) } : null,
      steps: parsed<ResolveResult['steps']>(row.steps),
    };
  },

  /** Creates child runs and records the parent's steps, one statement; see START_CHILDREN. */
  async startChildren(
    sql: SqlClient,
    a: { runId: string; epoch: number; appVersion: string | null; children: Array<{ seq: number; name: string; child: NewRun; output: string }> },
  ): Promise<{ held: boolean; conflicts: Array<{ seq: number; workflow: string }> }> {
    const c = a.children;
    const [row] = await sql.query<{ held: number; conflicts: unknown }>(W.START_CHILDREN, [
      a.runId, a.epoch, c.map((x) => x.seq), c.map((x) => x.name), c.map((x) => x.child.id), c.map((x) => x.child.workflowName),
      c.map((x) => x.child.queue), c.map((x) => x.child.input), c.map((x) => x.child.priority), c.map((x) => x.child.delayMs),
      c.map((x) => x.child.timeoutMs), c.map((x) => x.output), a.appVersion, historyOn(sql),
    ]);
    return { held: Number(row.held) === 1, conflicts: parsed<Array<{ seq: number; workflow: string }>>(row.conflicts) };
  },

  /** Records the step and upserts the event; false = the execution no longer holds the run. */
  async setEvent(sql: SqlClient, a: { runId: string; epoch: number; seq: number; name: string; key: string; value: string }): Promise<boolean> {
    const [row] = await sql.query<{ held: number }>(W.SET_EVENT, [a.runId, a.epoch, a.seq, a.name, a.key, a.value]);
    return Number(row.held) === 1;
  },

  async getEvent(sql: SqlClient, runId: string, key: string): Promise<{ found: boolean; value: unknown; status: RunStatus | null }> {
    const [row] = await sql.query<{ found: boolean; value: unknown; status: RunStatus | null }>(W.SELECT_EVENT, [runId, key]);
    return { found: row.found === true, value: row.value, status: row.status ?? null };
  },

  /** Durable.send: the sender's step and the message in one fenced statement; see SEND_FROM_RUN. */
  async sendFromRun(
    sql: SqlClient,
    a: { runId: string; epoch: number; seq: number; name: string; target: string; topic: string; payload: string },
  ): Promise<{ held: boolean; found: boolean }> {
    const [row] = await sql.query<{ held: number; found: number }>(W.SEND_FROM_RUN, [
      a.runId, a.epoch, a.seq, a.name, a.target, a.topic, a.payload, `${a.runId}#${a.seq}`,
    ]);
    return { held: Number(row.held) === 1, found: Number(row.found) === 1 };
  },

  /** Stores a message and signals the run; found = the run exists, sent = a new message (not a duplicate key). */
  async send(sql: SqlClient, a: { runId: string; topic: string; payload: string; idempotencyKey: string | null }): Promise<{ found: boolean; sent: boolean }> {
    const [row] = await sql.query<{ found: number; sent: number }>(W.SEND_MESSAGE, [a.runId, a.topic, a.payload, a.idempotencyKey]);
    return { found: Number(row.found) === 1, sent: Number(row.sent) === 1 };
  },
};
