import { AsyncLocalStorage } from 'node:async_hooks';
import { WorkflowCancelledError } from '../errors/index.js';
import type { RecordedStep } from '../store/rows.js';
import type { StepDefinition } from '../definitions/definitions.js';
import type { EngineSpan } from '../telemetry/tracing.js';
import type { ExecutionServices } from './execution-services.js';
import { DeferredCheckpoints } from './deferred-checkpoints.js';
import { ExecutionStopped, type StopReason } from './execution-stopped.js';
import { recordRunEvent } from './run-history.js';
import { StepMatcher, type StepMatch } from './step-matcher.js';

/** ExecutionStopped lives in execution-stopped.ts (the checkpoint writers need it without this file); re-exported for existing importers. */
export { ExecutionStopped, type StopReason } from './execution-stopped.js';

/** The compensation of a completed step, ready to run as a durable step of the run. */
export interface PendingCompensation {
  /** The step it undoes. */
  seq: number;
  step: string;
  /** What undoes it (a method name, or an inline function's name). */
  by: string;
  /** The compensation step: name `compensate:<step>`, the compensation's own options. */
  def: StepDefinition;
  call: () => unknown;
}

/** State of one execution of one run (one claim). */
export class RunContext {
  private readonly matcher: StepMatcher;
  /** The run's workflow (log lines, metrics and spans name it). */
  workflowName = '';
  /** The span of this execution (telemetry; null without tracing): its steps' spans are its children. */
  span: EngineSpan | null = null;
  /** Why the run is ending FAILED (recorded on the execution's span). */
  failure: unknown = undefined;
  /** Set once: the reason the execution stopped; no write is made after it. */
  stopped: StopReason | null = null;
  /** An error that must fail the run even if workflow code catches it (e.g. non-determinism). */
  fatal: Error | null = null;
  /** abort and forward, made on first use: most executions never look at them (a step without a time-out does not). */
  private abortController: AbortController | null = null;
  private forwardController: AbortController | null = null;
  /**
   * cancel(id, { compensate: true }) was asked: every durable operation not done yet throws
   * WorkflowCancelledError into the workflow code, which unwinds; then the compensations run and
   * the run ends CANCELLED.
   */
  cancelling = false;
  /** Set with `cancelling` when the run unwinds because it is failing (its deadline passed): it ends FAILED with this. */
  failing: Error | null = null;
  /** Compensations of the steps completed so far (recorded or replayed) that have not run yet, by step seq. */
  readonly compensations = new Map<number, PendingCompensation>();
  /** Steps whose compensation ran (or was recorded) in this execution. */
  readonly compensated = new Set<number>();
  /** A compensation failed: no further compensation runs in this execution (older steps stay as they are). */
  compensationFailed = false;
  /**
   * available_at of the run as this execution last saw it: durable waits suspend the run only
   * while it is unchanged (a message or a finished child changes it). See store/waits.ts.
   */
  token: Date | null = null;
  /** Set when the execution stopped because the run suspended (WAITING until then), and its queue. */
  suspended: { until: Date; queue: string } | null = null;
  /** Pending durable waits of this execution (created on first use; see waits.ts). */
  waits: { signal(): void; idle(): void; hurry(): void; timeMoved(): void; cancel(err: Error): void; close(): Promise<void> } | null = null;
  /** The worker's slot this execution holds: given back while the run's end is written (see worker/run-slot.ts). */
  slot: { ending(): void; resumed(): void } | null = null;
  /** Step executions in flight: a run suspends only when none is (its waits are all it has left). */
  private busyCount = 0;
  /** Writes in flight that may give the lease up (the run's end, a suspension); see releasing(). */
  private releasingCount = 0;

  /**
   * Replay only (verify, replayRun): durable operations return what the run recorded; one that would
   * do work (a step's code, a write, a wait) never settles instead, and the first such is `frontier`.
   */
  readonly replayOnly: boolean;
  /** Replay only: where the replay reached the end of what the run recorded (the first operation that would do work). */
  frontier: { seq: number; name: string } | null = null;
  /** Durable operations taken so far (replay only watches it to tell when the workflow has stopped moving). */
  operations = 0;
  /** The app's context the run was started with (engine option `context`), decoded; undefined without one. */
  appContext: unknown = undefined;
  /** The SET LOCAL settings of its transactional steps, once computed (workflow/app-context.ts); undefined until then. */
  appSettings: { names: string[]; values: string[] } | null | undefined = undefined;
  /** Checkpoints of completed steps not written yet (the workflow already has their results). */
  readonly checkpoints = new DeferredCheckpoints(this);

  constructor(
    readonly runId: string,
    readonly epoch: number,
    steps: RecordedStep[],
    readonly services: ExecutionServices,
    opts: { replayOnly?: boolean } = {},
  ) {
    this.matcher = new StepMatcher(runId, steps);
    this.replayOnly = opts.replayOnly === true;
  }

  /** Aborted when the execution stops; steps receive it through Durable.signal(). */
  get abort(): AbortController {
    if (!this.abortController) {
      this.abortController = new AbortController();
      if (this.stopped) this.abortController.abort(new ExecutionStopped(this.stopped));
    }
    return this.abortController;
  }

  /**
   * Aborted when the execution stops, and also when the run is asked to cancel with compensation:
   * the signal of the workflow's own steps (compensation steps get `abort`, they must finish).
   */
  get forward(): AbortController {
    if (!this.forwardController) {
      this.forwardController = new AbortController();
      if (this.cancelling) this.forwardController.abort(this.cancelledError());
      else if (this.stopped) this.forwardController.abort(new ExecutionStopped(this.stopped));
    }
    return this.forwardController;
  }

  /** Step progress reporter of this execution (created on first Durable.progress(); see progress.ts). */
  progress: { stepEnded(seq: number): void; close(): void } | null = null;

  /** Step executions this execution started, awaited by the workflow or not (see track). */
  private readonly started = new Set<Promise<unknown>>();
  /** The last history row this execution writes without waiting for it (a retried step): the next one is written after it. */
  private lastHistoryWrite: Promise<void> | null = null;

  /**
   * Writes a history row without holding the execution up (`write` never rejects: recordRunEvent), after
   * the ones this execution wrote before it, so a run's rows are numbered in the order they happened
   * (lifecycle hooks deliver them in that order) even when two are on their way at once (a step
   * retried at once, on two connections). An end that deletes the run waits for them (historyInFlight).
   */
  historyWritten(write: () => Promise<void>): void {
    const previous = this.lastHistoryWrite ?? Promise.resolve();
    const next: Promise<void> = previous.then(write).finally(() => {
      if (this.lastHistoryWrite === next) this.lastHistoryWrite = null;
    });
    this.lastHistoryWrite = next;
  }

  /** Resolves when the history rows on their way are written (or given up); null when none is. */
  get historyInFlight(): Promise<void> | null {
    return this.lastHistoryWrite;
  }

  /**
   * Tracks a step the workflow started. A workflow may return (or throw) without awaiting one:
   * the run's end then waits for it (settled()), so its checkpoint is never cut off by the
   * run's end, and its rejection is handled here (no unhandled rejection crashing the process;
   * the workflow still gets it when it awaits the step).
   */
  track(p: Promise<unknown>): void {
    this.started.add(p);
    const done = () => this.started.delete(p);
    p.then(done, done);
  }

  /** Resolves once every step started so far has settled (never rejects). */
  async settled(): Promise<void> {
    while (this.started.size) await Promise.allSettled([...this.started]);
  }

  /**
   * The position of the next durable operation, called `name`, and its checkpoint: taken synchronously
   * at call time, so Promise.all is deterministic; matched to the record by the rule of StepMatcher
   * (DeterminismError when the code departs from it).
   */
  match(name: string): StepMatch {
    this.operations++;
    return this.matcher.take(name);
  }

  /** Durable.patched(): the marker's position and checkpoint, or null when the run passed this point before the patch existed. */
  matchPatch(name: string): StepMatch | null {
    this.operations++;
    return this.matcher.takePatch(name);
  }

  /** Replay only: an operation that would do work; it never settles (the replay has reached the run's frontier). */
  reachFrontier<T>(seq: number, name: string): Promise<T> {
    this.frontier ??= { seq, name };
    return new Promise<T>(() => {});
  }

  /** The sequence number the next durable operation will take (if it matches the record). */
  get position(): number {
    return this.matcher.position;
  }

  /** Every step recorded when this execution began (replay), in seq order. */
  recordedSteps(): RecordedStep[] {
    return this.matcher.recordedSteps();
  }

  recordedStep(seq: number): RecordedStep | undefined {
    return this.matcher.recordedStep(seq);
  }

  stop(reason: StopReason): void {
    if (this.stopped) return;
    this.stopped = reason;
    this.abortController?.abort(new ExecutionStopped(reason));
    if (this.forwardController && !this.forwardController.signal.aborted) this.forwardController.abort(new ExecutionStopped(reason));
    if (reason === 'lease-lost') {
      recordRunEvent(this.services, this.runId, 'lease_lost', { epoch: this.epoch, worker: this.services.options.workerId });
      this.services.telemetry.metrics.leaseLost(this.workflowName);
    }
  }

  /**
   * Runs a write that may end this execution's hold on the run (its end, a suspension). A
   * heartbeat that does not find the run RUNNING meanwhile is not a lost lease: the write
   * finds out itself (it is fenced) whether the lease was still ours.
   */
  async releasing<T>(write: () => Promise<T>): Promise<T> {
    this.releasingCount++;
    try {
      return await write();
    } finally {
      this.releasingCount--;
    }
  }

  /** True while a write that may end the hold on the run is in flight. */
  get isReleasing(): boolean {
    return this.releasingCount > 0;
  }

  /** Number of step executions in flight. */
  get busy(): number {
    return this.busyCount;
  }

  /** Marks work (a step execution) in flight until the returned function is called. */
  enterWork(): () => void {
    this.busyCount++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      if (--this.busyCount === 0) this.waits?.idle();
    };
  }

  /**
   * A fenced write matched nothing: another worker owns the run now (or it was cancelled). Stops
   * this execution; returns the error to throw into the workflow code.
   */
  leaseLost(): ExecutionStopped {
    this.stop('lease-lost');
    return new ExecutionStopped('lease-lost');
  }

  /** Throws ExecutionStopped if the execution must not go on. */
  throwIfStopped(): void {
    if (this.stopped) throw new ExecutionStopped(this.stopped);
  }

  /**
   * The run is to be cancelled with compensation: its steps' signals abort, its pending waits and
   * every durable operation not done yet throw WorkflowCancelledError (what completed meanwhile is
   * kept: a replay sees the same). The executor then runs the compensations and ends it CANCELLED.
   */
  requestCancel(): void {
    if (this.cancelling || this.stopped) return;
    this.cancelling = true;
    this.forwardController?.abort(this.cancelledError());
    this.waits?.cancel(this.cancelledError());
  }

  /**
   * The run is failing (it passed its deadline): it unwinds like a run cancelled with compensation,
   * but every durable operation not done yet throws `error`, and the run ends FAILED with it.
   */
  requestFail(error: Error): void {
    if (this.cancelling || this.stopped) return;
    this.failing = error;
    this.requestCancel();
  }

  /** What a durable operation of a run being unwound (cancelled with compensation, or failing) throws. */
  cancelledError(): Error {
    if (this.failing) return this.failing;
    return new WorkflowCancelledError(
      this.runId,
      `Run ${this.runId} is being cancelled (cancel with compensate: true): this durable operation does not run; the ` +
        `workflow unwinds, then the compensations of its completed steps run and the run ends CANCELLED.`,
    );
  }
}

/** What is in scope while code runs: the run, and the step being executed (if any). */
export interface DurableScope {
  run: RunContext;
  /** signal: the attempt's Durable.signal() (the run stopping or being cancelled, or the step's timeout). */
  step?: { name: string; seq: number; tx?: unknown; signal?: AbortSignal };
}

export const durableScope = new AsyncLocalStorage<DurableScope>();

export const currentScope = (): DurableScope | undefined => durableScope.getStore();
