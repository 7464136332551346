import type { BackfillView } from '../engine/backfills.js';
import { Inject, Injectable, type Type } from '@nestjs/common';
import { InvalidArgumentError, UnknownWorkflowError } from '../errors/index.js';
import type { CancelOptions, ControlOptions, ForkResult } from '../engine/run-control.js';
import type { BulkAction, BulkFilter, BulkOptions, BulkResult } from '../engine/bulk.js';
import type { RunView } from '../engine/run-view.js';
import type { RunExport } from '../engine/run-export.js';
import type { SendOptions } from '../engine/queries.js';
import type { StartManyItem } from '../engine/start-runs.js';
import type { StartOptions } from '../engine/new-run.js';
import type { WorkflowHandle } from '../engine/handle.js';
import type { ReadStreamOptions, StreamChunk } from '../engine/stream-reader.js';
import type { StreamSummary } from '../store/streams.js';
import type { RunStatus } from '../store/rows.js';
import type { MessageEvent } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { streamEvents, type StreamEventsOptions } from './stream-events.js';
import type { SignalDefinition } from '../definitions/signals.js';
import type { CallbackDelivery } from '../engine/signals.js';
import { checkPayloadClass } from './signal-endpoints.js';
import type { ScheduleClient } from '../engine/schedule-client.js';
import type { FlowControlClient } from '../engine/flow-control.js';
import type { RunEvent } from '../store/history.js';
import type { PrismaLike } from '../store/sql-client.js';
import { WORKFLOW_METADATA } from '../decorators/metadata.js';
import { DurableRuntime } from './durable-runtime.js';

/** The methods of T that take one argument (candidates for `start(Class, method, input)`). */
export type WorkflowMethodKeys<T> = { [K in keyof T]: T[K] extends (input: never) => unknown ? K : never }[keyof T] & string;
/** The input type of workflow method K of T. */
export type InputOf<T, K extends keyof T> = T[K] extends (input: infer I) => unknown ? I : never;
/** The output type (awaited) of workflow method K of T. */
export type OutputOf<T, K extends keyof T> = T[K] extends (...args: never[]) => infer R ? Awaited<R> : never;

/** The two ways to call start(): by name, or by class and method. */
type StartByName = [workflowName: string, input?: unknown, opts?: StartOptions];
type StartByClass = [workflowClass: Type<unknown>, method: string, input?: unknown, opts?: StartOptions];

/** Starts, inspects and controls workflow runs. Inject it anywhere in the app. */
@Injectable()
export class WorkflowClient {
  constructor(@Inject(DurableRuntime) private readonly runtime: DurableRuntime) {}

  /**
   * Runtime schedules (e.g. one per tenant): create, update, delete, pause, resume, trigger, get,
   * list, runs. Stored in durable_schedules; each slot starts one run across all instances.
   */
  get schedules(): ScheduleClient {
    return this.runtime.engine.schedules;
  }

  /**
   * Flow control at runtime: set or reset a queue's cluster-wide limits (globalConcurrency,
   * keyConcurrency), list them with their usage, the busiest concurrency keys, and why a run has not started.
   */
  get flowControl(): FlowControlClient {
    return this.runtime.engine.flowControl;
  }

  /**
   * Starts a run of a workflow, by name or typed: `start(OrderWorkflows, 'fulfil', input)`.
   * With `{ tx }` (a Prisma interactive-transaction client) the run is written in that
   * transaction: it exists, and runs, only if the transaction commits.
   */
  start<T = unknown>(workflowName: string, input?: unknown, opts?: StartOptions): Promise<WorkflowHandle<T>>;
  start<C, K extends WorkflowMethodKeys<C>>(
    workflowClass: Type<C>,
    method: K,
    input: InputOf<C, K>,
    opts?: StartOptions,
  ): Promise<WorkflowHandle<OutputOf<C, K>>>;
  async start(...args: StartByName | StartByClass): Promise<WorkflowHandle<unknown>> {
    const [name, input, opts] = typeof args[0] === 'function' ? byClass(args as StartByClass) : byName(args as StartByName);
    return this.runtime.engine.startRun(name, input, opts);
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

  /** The run and its checkpoints as stored, JSON-safe (null if none): what replayRun() of nestjs-durable/testing replays. */
  exportRun(runId: string): Promise<RunExport | null> {
    return this.runtime.engine.exportRun(runId);
  }

  /**
   * Cancels an unfinished run: it stops at the next step boundary; resume() continues it later.
   * With `{ compensate: true }` it first undoes what its completed steps did (their compensations,
   * newest first, each a durable step), then ends CANCELLED. `actor` (who asks) is recorded in
   * the run's history.
   */
  cancel(runId: string, opts?: CancelOptions): Promise<void> {
    return this.runtime.engine.cancel(runId, opts);
  }

  /** Resumes a CANCELLED or FAILED run from its last checkpoint. */
  resume(runId: string, opts?: ControlOptions): Promise<void> {
    return this.runtime.engine.resume(runId, opts);
  }

  /**
   * A new run of the same workflow and input that reuses the run's checkpoints before `fromStep`
   * (0: from the start). Every step from there on runs again — including plain steps whose
   * effects already happened once in the source run.
   */
  fork(runId: string, fromStep = 0, opts?: ControlOptions): Promise<ForkResult> {
    return this.runtime.engine.fork(runId, fromStep, opts);
  }

  /**
   * Applies an action to every run a filter selects now, in bounded batches, with the single-run
   * semantics: e.g. after a fix, `bulk('retry', { workflows: ['fulfilOrder'] })` resumes every
   * FAILED run of fulfilOrder from its failed step. Runs created after the call are left alone.
   */
  bulk(action: BulkAction, filter: BulkFilter = {}, opts: BulkOptions = {}): Promise<BulkResult> {
    return this.runtime.engine.bulk(action, filter, opts);
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

  /** Pauses a backfill (a run whose workflow calls Durable.backfill) after its current batch; it waits without a worker slot. */
  pauseBackfill(runId: string): Promise<void> {
    return this.runtime.engine.pauseBackfill(runId);
  }

  /** Lets a paused backfill go on from where it stopped. */
  resumeBackfill(runId: string): Promise<void> {
    return this.runtime.engine.resumeBackfill(runId);
  }

  /** The newest backfills with their progress (rows done, estimate, rate, time left), newest first. */
  backfills(opts?: { limit?: number }): Promise<BackfillView[]> {
    return this.runtime.engine.backfills(opts);
  }

  /**
   * Sends a signal (defineSignal) to a run waiting for it with Durable.waitForSignal, without the
   * endpoint's guards (your code decides who may): `body` as a sender would POST it, checked against
   * the signal's payload (a DTO class with ValidationPipe, or its function).
   * 404-like RunNotFoundError for an unknown run; IllegalTransitionError once it ended.
   */
  async sendSignal<T>(
    runId: string,
    signal: SignalDefinition<T> | string,
    body: unknown,
    opts?: { idempotencyKey?: string },
  ): Promise<void> {
    const def = typeof signal === 'string' ? this.runtime.engine.options.signals.get(signal) : signal;
    await this.runtime.engine.sendSignal(runId, signal as SignalDefinition, def ? await checkPayloadClass(def, body) : body, opts);
  }

  /**
   * Delivers a body to the run of a callback token (Durable.callback), when your own route receives
   * callbacks (the module's endpoint does this for you). CallbackRefusedError when refused.
   */
  completeCallback(token: string, body: unknown): Promise<CallbackDelivery> {
    return this.runtime.engine.completeCallback(token, body, checkPayloadClass);
  }

  /** The chunks of a run's stream (Durable.stream), live, from `opts.from`; see DurableEngine.readStream. */
  readStream<T = unknown>(
    runId: string,
    stream: string,
    opts?: ReadStreamOptions,
  ): AsyncGenerator<StreamChunk<T>, RunStatus | null, undefined> {
    return this.runtime.engine.readStream<T>(runId, stream, opts);
  }

  /**
   * A run's stream as Server-Sent Events, for an `@Sse()` route of your own (behind your guards):
   * `return this.workflows.streamEvents(id, 'answer', { lastEventId: req.headers['last-event-id'] })`.
   * Each chunk is an event whose id is its position (EventSource resumes after it), then `end`.
   */
  streamEvents<T = unknown>(runId: string, stream: string, opts: StreamEventsOptions = {}): Observable<MessageEvent> {
    return streamEvents<T>((o) => this.runtime.engine.readStream<T>(runId, stream, o), opts);
  }

  /** The streams a run wrote to (chunks, ended, last write). */
  listStreams(runId: string, opts?: { limit?: number }): Promise<StreamSummary[]> {
    return this.runtime.engine.listStreams(runId, opts);
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

function byName([name, input, opts]: StartByName): [string, unknown, StartOptions | undefined] {
  if (typeof name !== 'string')
    throw new InvalidArgumentError(
      `start(): the first argument must be a workflow name or a class with @Workflow() methods (got ${typeof name}).`,
      'workflowName',
    );
  return [name, input, opts];
}

function byClass([cls, method, input, opts]: StartByClass): [string, unknown, StartOptions | undefined] {
  const fn = (cls.prototype as Record<string, object> | undefined)?.[method];
  const meta = fn && (Reflect.getMetadata(WORKFLOW_METADATA, fn) as { name: string } | undefined);
  if (!meta)
    throw new UnknownWorkflowError(`${cls.name}.${String(method)}`, [], `${cls.name}.${String(method)}() is not marked @Workflow().`);
  return [meta.name, input, opts];
}
