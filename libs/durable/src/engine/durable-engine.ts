import type { LocalRunEnd } from './local-results.js';
import { backfills, controlBackfill, type BackfillView } from './backfills.js';
import type { StepAttemptHooks } from '../config/clock.js';
import type { EngineClock } from '../config/clock.js';
import { InvalidOptionsError } from '../errors/index.js';
import type { ResolvedEngineOptions } from '../config/options.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import type { RunEvent } from '../store/history.js';
import { getResult } from '../store/runs.js';
import { isMysqlUrl } from '../store/dialect.js';
import type { PrismaLike } from '../store/sql-client.js';
import type { Store } from '../store/store.js';
import type { DurableEventHandler, DurableEventType, OnEventOptions } from '../definitions/hooks.js';
import { listHookCursors, type HookCursorRow } from '../store/hook-cursors.js';
import type { EngineContext } from './engine-context.js';
import { EngineRuntime, type DurableEngineConfig } from './engine-runtime.js';
import { WorkflowHandle, type HandleBackend } from './handle.js';
import type { StartOptions } from './start-options.js';
import { getEvent, getRun, getRunEvents, send, type SendOptions } from './queries.js';
import { exportRun, type RunExport } from './run-export.js';
import { cancel, fork, resume, type CancelOptions, type ControlOptions, type ForkResult } from './run-control.js';
import {
  bulkAll,
  bulkBatch,
  bulkCount,
  completeFilter,
  type BulkAction,
  type BulkBatchResult,
  type BulkCount,
  type BulkFilter,
  type BulkOptions,
  type BulkPosition,
  type BulkResult,
} from './bulk.js';
import type { RunView } from './run-view.js';
import { FlowControlClient } from './flow-control.js';
import { ScheduleClient } from './schedule-client.js';
import { startMany, startRun, type StartManyItem } from './start-runs.js';
import { verifyRuns, type VerifyOptions, type VerifyReport } from './verify.js';
import { checkEngineConfig } from './engine-config-check.js';
import { readStream, type ReadStreamOptions, type StreamChunk } from './stream-reader.js';
import { completeCallback, sendSignal, type CallbackDelivery } from './signals.js';
import type { SignalDefinition } from '../definitions/signals.js';
import { listStreams, type StreamSummary } from '../store/streams.js';
import type { RunStatus } from '../store/rows.js';

export type { DurableEngineConfig } from './engine-runtime.js';

/**
 * The durable-execution engine, independent of Nest: starts runs, executes the ones its worker
 * claims, and answers questions about them. Each operation lives in its own module (start-runs,
 * run-control, queries); the connections, worker and sweeper are wired and started by its
 * EngineRuntime (engine-runtime.ts).
 */
export class DurableEngine implements HandleBackend {
  readonly options: ResolvedEngineOptions;
  readonly registry: WorkflowRegistry;
  private readonly runtime: EngineRuntime;
  private readonly context: EngineContext;
  /** The engine's clock; the testing kit moves it (virtual time). */
  readonly clock: EngineClock;
  /** Hooks into step attempts (the testing kit's fault injection); empty in production. */
  readonly stepHooks: StepAttemptHooks;
  /** Runtime schedules (create, update, delete, pause, resume, trigger, list); declared ones too. */
  readonly schedules = new ScheduleClient(() => this.context);
  /** Flow control at runtime: queue limits (set, reset, list), key usage, why a run has not started. */
  readonly flowControl = new FlowControlClient(() => this.context);

  /** The connection URL the engine was given, if any (verify opens its own read-only session from it on MariaDB). */
  private readonly connectionUrl: string | null;

  constructor(config: DurableEngineConfig) {
    checkEngineConfig(config);
    this.connectionUrl = typeof config.connection === 'string' ? config.connection : null;
    this.runtime = new EngineRuntime(config);
    ({
      options: this.options,
      registry: this.registry,
      context: this.context,
      clock: this.clock,
      stepHooks: this.stepHooks,
    } = this.runtime);
  }

  /**
   * Checks the schema; unless `schedules: false`, syncs the schedules declared on workflows and
   * starts the scheduler; unless `worker: false`, starts claiming, heartbeats, the sweeper and the listener.
   */
  start(): Promise<void> {
    return this.runtime.start();
  }

  /** Graceful: drain in-flight runs up to shutdownGraceMs, hand back the rest, close connections. */
  stop(): Promise<void> {
    return this.runtime.stop();
  }

  /**
   * A lifecycle hook: `handler` gets every event of the given types (run.succeeded, run.failed,
   * run.cancelled, step.retried, lease.lost) after it committed, at least once (a crash or a throw
   * delivers it again; `event.id` tells a redelivery), in history order, from one instance at a
   * time. Read from the run history (`history: true`) by instances with a worker; `consumer` names
   * its durable cursor. Register before start(). The engine never waits for handlers.
   */
  onEvent(types: DurableEventType | DurableEventType[], handler: DurableEventHandler, opts: OnEventOptions): void {
    this.runtime.onEvent(types, handler, opts);
  }

  /** Every lifecycle-hook consumer known to the database: its cursor, lease holder, and events still to read (up to 10 000). */
  hookCursors(): Promise<HookCursorRow[]> {
    return listHookCursors(this.runtime.store, 10_000);
  }

  /** Starts a run (see StartOptions). Unknown workflow → UnknownWorkflowError listing the known names. */
  async startRun<T = unknown>(workflowName: string, input: unknown, opts: StartOptions = {}): Promise<WorkflowHandle<T>> {
    const run = await startRun(this.context, workflowName, input, opts);
    return new WorkflowHandle<T>(run.id, run.workflowName, this, run.outcome);
  }

  /** Starts many runs with one INSERT (optionally inside the caller's Prisma transaction). */
  async startMany(items: StartManyItem[], opts: { tx?: PrismaLike } = {}): Promise<WorkflowHandle[]> {
    const runs = await startMany(this.context, items, opts);
    return runs.map((r) => new WorkflowHandle(r.id, r.workflowName, this));
  }

  /** A handle to an existing run (no query). */
  handle<T = unknown>(id: string, workflowName = ''): WorkflowHandle<T> {
    return new WorkflowHandle<T>(id, workflowName, this);
  }

  /** The run with its steps, or null. */
  getRun(id: string): Promise<RunView | null> {
    return getRun(this.context, id);
  }

  /** The run and its checkpoints as stored (RunExport, JSON-safe), or null: replay it in a test with replayRun (nestjs-durable/testing). */
  exportRun(id: string): Promise<RunExport | null> {
    return exportRun(this.context, id);
  }

  /**
   * Cancels an unfinished run and (option cancelChildren) its unfinished children; with
   * `{ compensate: true }` they first undo what their steps did; see run-control.ts.
   */
  cancel(id: string, opts: CancelOptions = {}): Promise<void> {
    return cancel(this.context, id, opts);
  }

  /** Resumes a CANCELLED or FAILED run from its last checkpoint (a failed final step runs again). */
  resume(id: string, opts: ControlOptions = {}): Promise<void> {
    return resume(this.context, id, opts);
  }

  /** A new run of the same workflow and input, reusing the checkpoints before `fromStep`; every later step runs again. */
  fork(id: string, fromStep: number, opts: ControlOptions & { requireRegistered?: boolean } = {}): Promise<ForkResult> {
    return fork(this.context, id, fromStep, { actor: opts.actor }, opts.requireRegistered ?? true);
  }

  /**
   * Applies `action` to every run `filter` selects when called (runs created later are left
   * alone), in bounded batches, each run with the single-run operation's semantics: e.g. resume
   * every FAILED run of a workflow after a fix: `bulk('retry', { workflows: ['fulfilOrder'] })`.
   */
  bulk(action: BulkAction, filter: BulkFilter = {}, opts: BulkOptions = {}): Promise<BulkResult> {
    return bulkAll(this.context, action, filter, opts);
  }

  /** A bulk action's dry run: how many runs it would change now, pinned to the database clock (`asOf`). */
  bulkCount(action: BulkAction, filter: BulkFilter = {}): Promise<BulkCount> {
    return bulkCount(this.context, action, completeFilter(filter));
  }

  /** One bounded batch of a bulk action from `at` (the admin API and the CLI drive these one request at a time). */
  bulkBatch(
    action: BulkAction,
    filter: BulkFilter,
    at: BulkPosition,
    opts: { limit: number; compensate?: boolean; actor?: string },
  ): Promise<BulkBatchResult> {
    return bulkBatch(this.context, action, completeFilter(filter), at, opts);
  }

  /** Sends a message to a run (exactly once to its Durable.recv); see queries.ts. */
  send(runId: string, topic: string, payload: unknown, opts: SendOptions = {}): Promise<void> {
    return send(this.context, runId, topic, payload, opts);
  }

  /**
   * Sends a signal (defineSignal, or its name among the option `signals`) to a run waiting for it
   * with Durable.waitForSignal: the body checked against the signal's payload. The Nest module's
   * signal endpoints and the dashboard call this after the signal's guards let the sender through.
   */
  sendSignal(runId: string, signal: SignalDefinition | string, body: unknown, opts: { idempotencyKey?: string } = {}): Promise<void> {
    return sendSignal(this.context, runId, signal, body, opts);
  }

  /**
   * Delivers the body POSTed to a callback URL (Durable.callback) to its run, for apps that route
   * callbacks themselves (the Nest module mounts an endpoint that calls this). CallbackRefusedError
   * when the token is not valid, expired, its run ended, or it was used with another body.
   */
  completeCallback(
    token: string,
    body: unknown,
    check?: (signal: SignalDefinition, body: unknown) => Promise<unknown>,
  ): Promise<CallbackDelivery> {
    return completeCallback(this.context, token, body, check);
  }

  /** Pauses a backfill (a run whose workflow calls Durable.backfill) after its current batch; it waits without a worker slot. */
  pauseBackfill(runId: string): Promise<void> {
    return controlBackfill(this.context, runId, 'pause');
  }

  /** Lets a paused backfill go on from where it stopped. */
  resumeBackfill(runId: string): Promise<void> {
    return controlBackfill(this.context, runId, 'resume');
  }

  /** The newest backfills with their progress (rows done, estimate, rate, time left), newest first. */
  backfills(opts: { limit?: number } = {}): Promise<BackfillView[]> {
    return backfills(this.context.store, opts.limit);
  }

  /**
   * The chunks of stream `stream` of run `runId` (Durable.stream), in order, from `opts.from`
   * (default 0), live: waits for new chunks; ends after the stream's close(), or once the run ended
   * and every chunk was read, or when `opts.signal` aborts. RunNotFoundError for an unknown run.
   */
  readStream<T = unknown>(
    runId: string,
    stream: string,
    opts: ReadStreamOptions = {},
  ): AsyncGenerator<StreamChunk<T>, RunStatus | null, undefined> {
    return readStream<T>({ store: this.runtime.store, waits: this.runtime.streamWaits }, runId, stream, opts);
  }

  /** The streams run `runId` wrote to: chunks, ended (closed), last write. */
  listStreams(runId: string, opts: { limit?: number } = {}): Promise<StreamSummary[]> {
    return listStreams(this.runtime.store, runId, opts.limit ?? 100);
  }

  /** The latest value the run published with Durable.setEvent(key), waiting up to `timeoutMs` (default 60 s); else null. */
  getEvent<T = unknown>(runId: string, key: string, opts: { timeoutMs?: number } = {}): Promise<T | null> {
    return getEvent<T>(this.context, runId, key, opts.timeoutMs ?? 60_000);
  }

  /** The run's history (created, claimed, suspended, woken, step_failed, completed, …), oldest first. */
  getRunEvents(runId: string, opts: { limit?: number } = {}): Promise<RunEvent[]> {
    return getRunEvents(this.context, runId, opts.limit ?? 1000);
  }

  /**
   * The clock jumped (the testing kit moved virtual time): look at every timer again now — claim
   * what became due, make the scheduler read its schedules and the waits executing here re-check
   * their times, and (unless `sweep: false`: no deadline passed) run the sweeper once.
   */
  timeMoved(opts: { sweep?: boolean } = {}): Promise<void> {
    return this.runtime.timeMoved(opts);
  }

  /**
   * Calls `listener` each time an execution in this process ends (the run finished, suspended or
   * stopped); returns the function that removes it. The testing kit's settle() waits on it.
   */
  onExecutionEnded(listener: (runId: string) => void): () => void {
    return this.runtime.worker.onRunFinished((id) => listener(id));
  }

  /**
   * Replays the unfinished runs (optionally recently finished ones too) against this engine's
   * workflows, reading inside one READ ONLY transaction on the engine's connection; reports the runs
   * the code would fail (see verify.ts). Works without start(): a build about to be deployed checks
   * the runs in the database before any of its instances executes one.
   */
  verify(opts: VerifyOptions = {}): Promise<VerifyReport> {
    const connection = this.runtime.pool ?? (isMysqlUrl(this.connectionUrl ?? '') ? this.connectionUrl! : null);
    if (!connection)
      throw new InvalidOptionsError(
        "verify reads through the engine's own connection: pass `connection` (a Postgres or MariaDB URL, or a pg Pool).",
      );
    return verifyRuns(this.registry, connection, opts);
  }

  /** The store the engine sends its statements through, for the library's own tools (the admin API). */
  get storeForTools(): Store {
    return this.runtime.store;
  }

  // --- HandleBackend -------------------------------------------------------

  async fetchResult(id: string) {
    const row = await getResult(this.runtime.store, id);
    if (row) return row;
    // A run that is not kept and succeeded in this process a moment ago.
    const output = this.runtime.local.deletedOutput(id);
    return output === undefined ? null : { status: 'SUCCEEDED' as const, output: JSON.parse(output) as unknown, error: null };
  }

  executesHere(id: string): boolean {
    return this.runtime.worker.executes(id);
  }

  waitLocal(id: string, ms: number, signal?: AbortSignal): Promise<LocalRunEnd | undefined> {
    return this.runtime.local.wait(id, ms, signal);
  }
}
