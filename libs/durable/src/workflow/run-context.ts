import { AsyncLocalStorage } from 'node:async_hooks';
import type { RecordedStep } from '../store/rows.js';
import type { ExecutionServices } from './execution-services.js';
import { recordRunEvent } from './run-history.js';

/** Why an execution stopped before its workflow returned. */
export type StopReason = 'lease-lost' | 'cancelled' | 'shutdown' | 'deadline' | 'suspended';

/**
 * Thrown into workflow code when its execution must stop (lease lost, cancelled, shutting
 * down). The executor recognises it and writes nothing more for the run.
 */
export class ExecutionStopped extends Error {
  constructor(readonly reason: StopReason) {
    super(`Execution stopped: ${reason}`);
    this.name = 'ExecutionStopped';
  }
}

/** State of one execution of one run (one claim). */
export class RunContext {
  private nextSeq = 0;
  private readonly recorded: Map<number, RecordedStep>;
  /** Set once: the reason the execution stopped; no write is made after it. */
  stopped: StopReason | null = null;
  /** An error that must fail the run even if workflow code catches it (e.g. non-determinism). */
  fatal: Error | null = null;
  /** Aborted when the execution stops; steps receive it through Durable.signal(). */
  readonly abort = new AbortController();
  /**
   * available_at of the run as this execution last saw it: durable waits suspend the run only
   * while it is unchanged (a message or a finished child changes it). See store/wait-sql.ts.
   */
  token: Date | null = null;
  /** Set when the execution stopped because the run suspended (WAITING until then), and its queue. */
  suspended: { until: Date; queue: string } | null = null;
  /** Pending durable waits of this execution (created on first use; see waits.ts). */
  waits: { signal(): void; idle(): void; hurry(): void; close(): Promise<void> } | null = null;
  /** Step executions in flight: a run suspends only when none is (its waits are all it has left). */
  private busyCount = 0;
  /** Writes in flight that may give the lease up (the run's end, a suspension); see releasing(). */
  private releasingCount = 0;

  constructor(
    readonly runId: string,
    readonly epoch: number,
    steps: RecordedStep[],
    readonly services: ExecutionServices,
  ) {
    this.recorded = new Map(steps.map((s) => [s.seq, s]));
  }

  /** Step executions this execution started, awaited by the workflow or not (see track). */
  private readonly started = new Set<Promise<unknown>>();

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

  /** The next step sequence number; assigned synchronously at call time, so Promise.all is deterministic. */
  takeSeq(): number {
    return this.nextSeq++;
  }

  recordedStep(seq: number): RecordedStep | undefined {
    return this.recorded.get(seq);
  }

  stop(reason: StopReason): void {
    if (this.stopped) return;
    this.stopped = reason;
    this.abort.abort(new ExecutionStopped(reason));
    if (reason === 'lease-lost')
      recordRunEvent(this.services, this.runId, 'lease_lost', { epoch: this.epoch, worker: this.services.options.workerId });
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
}

/** What is in scope while code runs: the run, and the step being executed (if any). */
export interface DurableScope {
  run: RunContext;
  step?: { name: string; seq: number; tx?: unknown };
}

export const durableScope = new AsyncLocalStorage<DurableScope>();

export const currentScope = (): DurableScope | undefined => durableScope.getStore();
