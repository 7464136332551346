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
  /** The app's context captured when the run was started (engine option `context`), decoded; null without one. */
  context?: unknown;
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
  /** The app's context at start (engine option `context`) as JSON text; null or absent without one. */
  context?: string | null;
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
  /**
   * Not kept (@Workflow({ deleteOnSuccess })): if it ends SUCCEEDED, the end's statement deletes the
   * run with what belongs to it instead of recording the end (its last checkpoints are not written).
   */
  delete?: boolean;
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
  context: unknown;
  steps: Array<RecordedStep & { attempts: number; startedAt: string | null; finishedAt: string }>;
}

/** A run held under a lease: (id, epoch) fences every write. */
export interface HeldRun {
  id: string;
  epoch: number;
}

/**
 * How a run's end went: recorded; refused because the run is being cancelled with compensation
 * (it must compensate and end CANCELLED instead); or lost (the lease moved on).
 */
export type EndResult = 'ended' | 'cancelling' | 'lost';

/** What a claim asks for: which runs, how many, for whom and for how long. */
export interface ClaimRequest {
  queue: string;
  /** At most this many runs. */
  limit: number;
  /** The worker that will hold the leases. */
  owner: string;
  leaseMs: number;
  /** Only runs of these workflows (the ones the worker has code for). */
  workflows: string[];
  /** Given: only runs these app versions started, or that carry no version. */
  versions?: string[] | null;
}

/** A row of a run's history, as getRunEvents returns it. */
export interface RunEvent {
  /** Increasing within the database (bigint as a number). */
  id: number;
  /**
   * created, claimed, woken (claimed after waiting), suspended, step_failed, step_retried,
   * released (handed back at shutdown), lease_expired (swept), lease_lost (seen by the executor),
   * completed, failed, cancelled, resumed, forked.
   */
  kind: string;
  detail: Record<string, unknown> | null;
  at: Date;
}

/** A history row delivered to hooks. */
export interface HookEventRow {
  id: string;
  runId: string;
  kind: string;
  detail: Record<string, unknown> | null;
  at: string;
  workflow: string | null;
}

export interface HookCursorRow {
  consumer: string;
  lastEventId: string;
  owner: string | null;
  leaseExpiresAt: Date | null;
  updatedAt: Date;
  /** History rows after the cursor (at most the limit asked). */
  behind: number;
}

/** How a pivot's checkpoint went: written; refused (a compensating cancel came first); or the lease is lost. */
export type PivotWrite = 'written' | 'cancelling' | 'lost';

/** What a database connection must offer: a query that returns rows (store/sql-client.ts's SqlClient has it). */
export interface SchemaQueryClient {
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
}

/**
 * What the startup check found. `version` is null when nothing tells it: no durable_* tables at
 * all, or a durable_schema table without its DEFAULT. Version 1 (the first release) had no
 * durable_schema table: durable_runs without it is version 1.
 */
export type SchemaState =
  /** virtualClock: a MariaDB test database of the testing kit (it holds durable_virtual_clock). */
  | { status: 'current'; version: number; virtualClock?: boolean }
  | { status: 'missing'; version: number | null; missing: string[] }
  | { status: 'older'; version: number; expected: number; dialect?: 'mysql' }
  | { status: 'newer'; version: number; expected: number };

export interface QueueFiguresRow {
  queues: Array<{ queue: string; state: 'due' | 'delayed' | 'waiting' | 'running'; count: number; oldestDueSeconds: number | null }>;
  schedulesOverdue: number;
  scheduleLagSeconds: number;
}

/** What a compensating cancel did to one run: 'refused' ones passed their pivot (`pivot`). */
export interface CompensatingCancel {
  id: string;
  outcome: 'cancelled' | 'cancelling' | 'refused';
  pivot: { seq: number; step: string } | null;
}

export interface UndoneRow {
  seq: number;
  step: string;
  undoneBy: { seq: number; step: string } | null;
}

/** One pending wait as RESOLVE_WAITS takes it. */
export interface WaitSpec {
  seq: number;
  kind: 'sleep' | 'recv' | 'child' | 'group';
  name: string;
  /** recv: the topic; child: the child run id; group: the seq of the step that started the group. */
  key: string | null;
  /** group: the number of its children that must have ended. */
  count?: number | null;
  /** group: the run that started it (a forked run waits on its source's group); absent: the waiting run. */
  owner?: string | null;
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
  /**
   * Steps written: resolved waits (SUCCEEDED) and newly recorded deadlines (WAITING); `message`: a
   * recv that received a message, sent in the trace context `traceparent` (null without one).
   */
  steps: Array<{ seq: number; status: 'SUCCEEDED' | 'WAITING'; output: unknown; message: boolean; traceparent: string | null }>;
}

/** A run as verify replays it. */
export interface VerifyRunRow {
  id: string;
  workflowName: string;
  status: RunStatus;
  appVersion: string | null;
  input: unknown;
  /** The run's context as stored (codec form); null without one. */
  context?: unknown;
  steps: RecordedStep[];
}

/** One chunk as written: `origin` makes the write idempotent (see DurableStreamChunk in durable.prisma). */
export interface ChunkWrite {
  runId: string;
  epoch: number;
  stream: string;
  origin: string;
  /** The encoded value (JSON text); null for the end marker. */
  value: string | null;
  isEnd: boolean;
  /** Written from workflow code: the write's own step, recorded in the same statement. */
  step: { seq: number; name: string } | null;
}

export interface StoredChunk {
  position: number;
  /** The stored JSON (the codec's encoding), as the driver returns it. */
  value: unknown;
  isEnd: boolean;
}

export interface StreamPage {
  /** null: no such run (it never existed, or retention deleted it). */
  status: RunStatus | null;
  /** The stream was closed (its last chunk is the end marker), whatever the page holds. */
  closed: boolean;
  chunks: StoredChunk[];
}

export interface StreamSummary {
  stream: string;
  chunks: number;
  ended: boolean;
  lastWrittenAt: Date;
}
