import type { SignalDefinition } from '../config/signal-types.js';
import type { RetryPolicy } from '../config/retry-policy.js';
import type { WorkflowScheduleOptions } from './schedule.js';

/** Options of @Workflow(). */
export interface WorkflowOptions {
  /** Name used by start(); default: the method name. Unique across the app. */
  name?: string;
  /** Queue the runs go to; default "default". Each queue has its own concurrency. */
  queue?: string;
  /** Deadline of a run, from its creation; past it the run ends FAILED. Default none. */
  timeoutMs?: number;
  /** Claim order within a queue: lower runs first. Default 0. */
  priority?: number;
  /**
   * Flow control: the concurrency key of a run, derived from its input (e.g. `(o) => o.tenantId`);
   * a start's `concurrencyKey` option overrides it. At most the queue's `keyConcurrency` runs of one
   * key execute at once across all instances (queue option or WorkflowClient.setQueueLimits).
   * Return null or undefined for no key. Must be deterministic and cheap: it runs at every start.
   */
  concurrencyKey?: (input: any) => string | null | undefined;
  /**
   * Start this workflow on a cron schedule, once per slot across all instances (the schedule's id
   * is the workflow's name; each run gets a ScheduledInput). Synced at boot; a pause made at
   * runtime is kept. See WorkflowScheduleOptions.
   */
  schedule?: WorkflowScheduleOptions;
  /**
   * The signals its runs wait for (defineSignal): a signal is delivered only to runs of workflows
   * that declare it (its endpoint answers 409 for a run of another workflow), and the dashboard
   * shows which workflows take it.
   */
  signals?: SignalDefinition<any>[];
  /**
   * Runs that are not kept: a run that succeeds is deleted by the statement that ends it, with its
   * steps, history, messages, events and stream chunks (a job queue's "remove on complete"). Failed
   * and cancelled runs are kept, and so is a child run (its parent reads its result from its row).
   * Once deleted, the run is gone from the admin API and the dashboard, its id may start a new run,
   * and `handle.result()` returns its output only in the process that ran it, for a minute after its
   * end (elsewhere: RunNotFoundError); lifecycle hooks do not see it succeed. See docs/workflows-and-steps.md,
   * "Runs that are not kept". Default false.
   */
  deleteOnSuccess?: boolean;
}

/** Prisma interactive-transaction options of a transactional step. */
export interface StepTransactionOptions {
  isolationLevel?: 'ReadUncommitted' | 'ReadCommitted' | 'RepeatableRead' | 'Serializable';
  /** Longest the transaction may run (Prisma default 5 000 ms). */
  timeout?: number;
  /** Longest to wait for a connection (Prisma default 2 000 ms). */
  maxWait?: number;
}

/** An inline compensation (Durable.step): receives the step's result. */
export type CompensationFn = (result: never) => unknown;

/** An inline compensation with step options of its own (retries, transactional, timeoutMs, …). */
export interface InlineCompensation extends Omit<StepOptions, 'name' | 'compensate'> {
  run: CompensationFn;
}

/** Options of @Step(). */
export interface StepOptions {
  /** Name recorded with the checkpoint; default: the method name. */
  name?: string;
  /** Number of retries after the first attempt, or a full policy. Default: the module's stepRetries (5 attempts, 1 s doubling). */
  retries?: number | RetryPolicy;
  /**
   * Run the step's code and its checkpoint in ONE Prisma transaction: its database writes
   * (made through Durable.tx()) commit exactly once, together with the checkpoint.
   */
  transactional?: boolean;
  /** Transaction options for a transactional step. */
  transaction?: StepTransactionOptions;
  /**
   * Longest one attempt of a plain step may run, in ms. When it is up, the step's
   * `Durable.signal()` aborts with a StepTimeoutError and the attempt fails with it (retried per
   * the retry policy) once the step's code has settled: the next attempt never starts while the
   * previous one still runs. A transactional step is bounded by `transaction.timeout` instead.
   */
  timeoutMs?: number;
  /**
   * What undoes the step once it has succeeded (a saga compensation). On @Step(): the name of a
   * method of the same class, called with the step's arguments followed by its result (its own
   * @Step options apply: make it `transactional: true` to undo database writes exactly once). In
   * Durable.step(): a function of the result, or `{ run, ...step options }`. The compensation is
   * recorded with the step's checkpoint (a transactional step: in its transaction), so it exists
   * if and only if the step's effect committed. Compensations run, newest step first, when the
   * workflow fails, on cancel(id, { compensate: true }), or when the workflow calls
   * Durable.compensate().
   */
  compensate?: string | CompensationFn | InlineCompensation;
  /**
   * The run's point of no return (a saga's pivot): once this step's checkpoint has committed,
   * cancel(id, { compensate: true }) is refused with a PivotPassedError (or, with
   * `afterPivot: 'stop'`, only stops the run), and a failure after it ends the run FAILED without
   * compensating. The check and the checkpoint are atomic: a compensating cancel accepted first makes
   * the pivot's transaction roll back (the run then compensates), one arriving after is refused. The
   * step must be `transactional: true` (its writes commit with its checkpoint, or not at all).
   */
  pivot?: boolean;
}

/** A workflow the engine can execute. */
export interface WorkflowDefinition {
  name: string;
  queue: string;
  options: WorkflowOptions;
  /** Runs the workflow body with its decoded input. */
  run: (input: unknown) => Promise<unknown>;
  /** For messages and the admin API: where it is declared. */
  className?: string;
  methodName?: string;
}

/** A step as the engine sees it when the decorated method is called. */
export interface StepDefinition {
  name: string;
  options: StepOptions;
}
