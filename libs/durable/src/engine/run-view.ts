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
  steps: Array<{
    seq: number;
    name: string;
    status: string;
    output: unknown;
    error: unknown;
    attempts: number;
    startedAt: Date | null;
    finishedAt: Date;
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
    steps: r.steps.map((s) => ({
      seq: s.seq,
      name: s.name,
      status: s.status,
      output: decode(s.output),
      error: s.error,
      attempts: s.attempts,
      startedAt: date(s.startedAt),
      finishedAt: date(s.finishedAt)!,
    })),
  };
}
