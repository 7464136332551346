import { Inject, Injectable, type Type } from '@nestjs/common';
import { DurableError } from '../errors/index.js';
import type { RunView, SendOptions, StartManyItem, StartOptions } from '../engine/engine.js';
import type { RunEvent } from '../engine/run-events.js';
import type { WorkflowHandle } from '../engine/handle.js';
import type { PrismaLike } from '../store/sql-client.js';
import { WORKFLOW_METADATA } from '../decorators/metadata.js';
import { DurableRuntime } from '../durable-runtime.js';

type WorkflowMethodKeys<T> = { [K in keyof T]: T[K] extends (input: never) => unknown ? K : never }[keyof T] & string;
type InputOf<T, K extends keyof T> = T[K] extends (input: infer I) => unknown ? I : never;
type OutputOf<T, K extends keyof T> = T[K] extends (...args: never[]) => infer R ? Awaited<R> : never;

/** Starts, inspects and controls workflow runs. Inject it anywhere in the app. */
@Injectable()
export class WorkflowClient {
  constructor(@Inject(DurableRuntime) private readonly runtime: DurableRuntime) {}

  /**
   * Starts a run of a workflow, by name or typed: `start(OrderWorkflows, 'fulfil', input)`.
   * With `{ tx }` (a Prisma interactive-transaction client) the run is written in that
   * transaction: it exists, and runs, only if the transaction commits.
   */
  start<T = unknown>(workflowName: string, input?: unknown, opts?: StartOptions): Promise<WorkflowHandle<T>>;
  start<C, K extends WorkflowMethodKeys<C>>(workflowClass: Type<C>, method: K, input: InputOf<C, K>, opts?: StartOptions): Promise<WorkflowHandle<OutputOf<C, K>>>;
  start(a: string | Type<unknown>, b?: unknown, c?: unknown, d?: StartOptions): Promise<WorkflowHandle<unknown>> {
    if (typeof a === 'function') return this.runtime.engine.startRun(workflowNameOf(a, b as string), c, d);
    return this.runtime.engine.startRun(a, b, c as StartOptions | undefined);
  }

  /** Starts many runs with one INSERT, optionally inside a Prisma transaction (`{ tx }`). */
  startMany(items: StartManyItem[], opts?: { tx?: PrismaLike }): Promise<WorkflowHandle[]> {
    return this.runtime.engine.startMany(items, opts);
  }

  /** A handle to an existing run, to wait for its result. */
  handle<T = unknown>(runId: string): WorkflowHandle<T> {
    return this.runtime.engine.handle<T>(runId);
  }

  /** The run with its steps, or null. */
  getRun(runId: string): Promise<RunView | null> {
    return this.runtime.engine.getRun(runId);
  }

  /** Cancels an unfinished run: it stops at the next step boundary; resume() continues it later. */
  cancel(runId: string): Promise<void> {
    return this.runtime.engine.cancel(runId);
  }

  /** Resumes a CANCELLED or FAILED run from its last checkpoint. */
  resume(runId: string): Promise<void> {
    return this.runtime.engine.resume(runId);
  }

  /**
   * Sends a message to a run; its `Durable.recv(topic)` receives it exactly once, in send order per
   * topic, even if sent before the run reaches the recv. With `{ tx }` (a Prisma interactive
   * transaction) the message exists iff the transaction commits; `{ idempotencyKey }` drops
   * duplicates. A run waiting for a message wakes at once.
   */
  send(runId: string, topic: string, payload: unknown, opts?: SendOptions): Promise<void> {
    return this.runtime.engine.send(runId, topic, payload, opts);
  }

  /**
   * The latest value a run published with `Durable.setEvent(key, …)`, waiting up to `timeoutMs`
   * (default 60 s) for it to appear; null on timeout, or at once if the run ended without it.
   */
  getEvent<T = unknown>(runId: string, key: string, opts?: { timeoutMs?: number }): Promise<T | null> {
    return this.runtime.engine.getEvent<T>(runId, key, opts);
  }

  /** The run's history (created, claimed, suspended, woken, step_failed, completed, cancelled, …), oldest first. */
  getRunEvents(runId: string, opts?: { limit?: number }): Promise<RunEvent[]> {
    return this.runtime.engine.getRunEvents(runId, opts);
  }
}

function workflowNameOf(cls: Type<unknown>, method: string): string {
  const fn = (cls.prototype as Record<string, object> | undefined)?.[method];
  const meta = fn && (Reflect.getMetadata(WORKFLOW_METADATA, fn) as { name: string } | undefined);
  if (!meta) throw new DurableError('UNKNOWN_WORKFLOW', `${cls.name}.${method}() is not marked @Workflow().`);
  return meta.name;
}
