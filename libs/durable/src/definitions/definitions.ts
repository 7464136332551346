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
   * Start this workflow on a cron schedule, once per slot across all instances (the schedule's id
   * is the workflow's name; each run gets a ScheduledInput). Synced at boot; a pause made at
   * runtime is kept. See WorkflowScheduleOptions.
   */
  schedule?: WorkflowScheduleOptions;
}

/** Prisma interactive-transaction options of a transactional step. */
export interface StepTransactionOptions {
  isolationLevel?: 'ReadUncommitted' | 'ReadCommitted' | 'RepeatableRead' | 'Serializable';
  /** Longest the transaction may run (Prisma default 5 000 ms). */
  timeout?: number;
  /** Longest to wait for a connection (Prisma default 2 000 ms). */
  maxWait?: number;
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
