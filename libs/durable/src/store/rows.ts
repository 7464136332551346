/** Run statuses, as stored. */
export type RunStatus = 'PENDING' | 'RUNNING' | 'WAITING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
export const RUN_STATUSES: readonly RunStatus[] = ['PENDING', 'RUNNING', 'WAITING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
/** The statuses a run ends in. */
export const FINISHED_STATUSES: ReadonlySet<RunStatus> = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

/** A step as recorded (loaded once per execution for replay). */
export interface RecordedStep {
  seq: number;
  name: string;
  /**
   * WAITING: a durable wait (recv with a timeout) recorded its deadline and has not ended yet.
   * CANCELLED: such a wait whose run was cancelled (WAITING again when the run is resumed or forked).
   */
  status: 'SUCCEEDED' | 'FAILED' | 'WAITING' | 'CANCELLED';
  output: unknown;
  error: unknown;
  /** What undoes this step, recorded with its checkpoint: the compensation's name and the step's arguments (codec form). */
  compensation?: StepCompensation | null;
  /** On a compensation step: the seq of the step it undoes. */
  compensates?: number | null;
}

/** durable_steps.compensation: `by` names the compensation (a method, or an inline function's name). */
export interface StepCompensation {
  by?: string;
  /** The step's arguments (codec form), for a compensation named by a method. */
  args?: unknown;
  /** The step is the run's pivot (StepOptions.pivot); a pivot with nothing to undo has no `by`. */
  pivot?: true;
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
  /** available_at when claimed: the token of durable waits (see store/waits.ts). */
  availableAt?: Date | null;
  /** cancel(id, { compensate: true }) was asked: this execution undoes what the run did, then ends it CANCELLED. */
  cancelRequested?: boolean;
  /** The run is failing (it passed its deadline): this execution unwinds, compensates, then ends it FAILED with this error. */
  failing?: RunFailure | null;
  /** The trace context the run was started in (W3C traceparent), if any: its execution spans continue that trace. */
  traceparent?: string | null;
  steps: RecordedStep[];
}

/** A run-level error as stored (durable_runs.error). */
export interface RunFailure {
  name?: string;
  code?: string;
  message: string;
}

/** A run to insert (validated; input as JSON text). */
export interface NewRun {
  id: string;
  workflowName: string;
  queue: string;
  input: string;
  priority: number;
  runAt: Date | null;
  delayMs: number | null;
  timeoutMs: number | null;
  parentId: string | null;
  appVersion: string | null;
  /** Flow control: the run's concurrency key (null: none). */
  concurrencyKey: string | null;
  /** W3C traceparent of the span active at start() (telemetry); null or absent without one. */
  traceparent?: string | null;
  /** Tags given at start (validated; [] = none). */
  tags: string[];
  /** Singleton: the start option dedupeKey (absent: none). */
  dedupeKey?: string;
  /** Debounce: the start option debounce, validated (absent: none). */
  debounce?: DebounceStart;
}

/** A debounced start's settings (see StartOptions.debounce). */
export interface DebounceStart {
  key: string;
  periodMs: number;
  maxDelayMs: number | null;
  input: 'first' | 'last';
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
  /** What undoes the step (JSON text of a StepCompensation), written with the checkpoint. */
  compensation?: string | null;
  /** On a compensation step: the seq of the step it undoes. */
  compensates?: number | null;
}

/** The end of a run to record (output/error as JSON text). */
export interface RunEnd {
  runId: string;
  epoch: number;
  /** CANCELLED: a run cancelled with { compensate: true } that has compensated. */
  status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
  output: string | null;
  error: string | null;
  /** Checkpoints of the run's last steps, not written yet: they go with the end, in its statement. */
  steps?: StepCheckpoint[];
  /** The run's parent (its parent_id; null for none): the end signals it, so it is locked with the run, in id order. */
  parentId: string | null;
}

/** A run as stored, with its steps (getRun). */
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
  cancel_requested_at: Date | null;
  progress: unknown;
  traceparent: string | null;
  steps: Array<RecordedStep & { attempts: number; startedAt: string | null; finishedAt: string }>;
}

/** A run held under a lease: (id, epoch) fences every write. */
export interface HeldRun {
  id: string;
  epoch: number;
}
