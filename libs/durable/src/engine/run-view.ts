import type { RunRow, RunStatus } from '../store/rows.js';
import { decode } from '../codec/codec.js';

/** A run as WorkflowClient.getRun returns it: decoded values, steps in order. */
export interface RunView {
  id: string;
  workflowName: string;
  queue: string;
  status: RunStatus;
  input: unknown;
  output: unknown;
  error: unknown;
  priority: number;
  attempt: number;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  leaseEpoch: number;
  parentId: string | null;
  appVersion: string | null;
  deadlineAt: Date | null;
  availableAt: Date;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  updatedAt: Date;
  /** Set when cancel(id, { compensate: true }) was asked: the run compensates, then ends CANCELLED. */
  cancelRequestedAt: Date | null;
  /** The app's context the run was started with (engine option `context`); undefined without one. */
  context: unknown;
  /**
   * The latest Durable.progress() of the steps executing now (steps recorded since are left out),
   * and when it was written (database clock); null if none, and while the run is not RUNNING.
   */
  progress: { at: Date; steps: Array<{ seq: number; step: string; value: unknown }> } | null;
  steps: Array<{
    seq: number;
    name: string;
    status: string;
    output: unknown;
    error: unknown;
    attempts: number;
    startedAt: Date | null;
    finishedAt: Date;
    /** What undoes this step, recorded with it: the compensation's name and, for a method, the step's arguments. */
    compensation: { by: string; args?: unknown } | null;
    /** The step is the run's pivot (`@Step({ pivot: true })`): once it is SUCCEEDED the run is no longer compensated. */
    pivot: boolean;
    /** On a compensation step (`compensate:<step>`): the seq of the step it undoes. */
    compensates: number | null;
  }>;
}

/** A stored run row, decoded for callers. */
export function toRunView(r: RunRow): RunView {
  const date = (v: unknown) => (v == null ? null : new Date(v as string));
  return {
    id: r.id,
    workflowName: r.workflow_name,
    queue: r.queue,
    status: r.status,
    input: decode(r.input),
    output: decode(r.output),
    error: r.error,
    priority: r.priority,
    attempt: r.attempt,
    leaseOwner: r.lease_owner,
    leaseExpiresAt: r.lease_expires_at,
    leaseEpoch: r.lease_epoch,
    parentId: r.parent_id,
    appVersion: r.app_version,
    deadlineAt: r.deadline_at,
    availableAt: r.available_at,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    updatedAt: r.updated_at,
    cancelRequestedAt: r.cancel_requested_at ?? null,
    context: r.context == null ? undefined : decode(r.context),
    progress: progressOf(r),
    steps: r.steps.map((s) => ({
      seq: s.seq,
      name: s.name,
      status: s.status,
      output: decode(s.output),
      error: s.error,
      attempts: s.attempts,
      startedAt: date(s.startedAt),
      finishedAt: date(s.finishedAt)!,
      compensation: s.compensation?.by
        ? { by: s.compensation.by, ...(s.compensation.args !== undefined ? { args: decode(s.compensation.args) } : {}) }
        : null,
      pivot: s.compensation?.pivot === true,
      compensates: s.compensates ?? null,
    })),
  };
}

/** Progress of the steps without a checkpoint yet (they were executing when it was written). */
function progressOf(r: RunRow): RunView['progress'] {
  const p = r.progress as { at?: string; steps?: Record<string, { step: string; value: unknown }> } | null;
  if (!p?.steps || r.status !== 'RUNNING') return null;
  const recorded = new Set(r.steps.map((s) => s.seq));
  const steps = Object.entries(p.steps)
    .map(([seq, v]) => ({ seq: Number(seq), step: v.step, value: decode(v.value) }))
    .filter((s) => !recorded.has(s.seq))
    .sort((a, b) => a.seq - b.seq);
  return steps.length ? { at: new Date(p.at!), steps } : null;
}
