import type { Pool } from 'pg';
import { EngineClock, type StepAttemptHooks } from '../config/clock.js';
import { InvalidOptionsError } from '../errors/index.js';
import { resolveEngineOptions, type EngineOptions, type ResolvedEngineOptions } from '../config/options.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import type { RunEvent } from '../store/history.js';
import { getResult } from '../store/runs.js';
import { readSchemaState, schemaStateError } from '../store/schema-version.js';
import type { PrismaLike } from '../store/sql-client.js';
import { queueFigures } from '../store/queue-figures.js';
import type { Store } from '../store/store.js';
import { Telemetry } from '../telemetry/telemetry.js';
import type { Notifier } from '../worker/notifier.js';
import { Scheduler } from '../worker/scheduler.js';
import { Sweeper } from '../worker/sweeper.js';
import { Worker } from '../worker/worker.js';
import { HookDispatcher } from '../worker/hook-dispatcher.js';
import {
  hookConsumer,
  type DurableEventHandler,
  type DurableEventType,
  type HookConsumer,
  type OnEventOptions,
} from '../definitions/hooks.js';
import { listHookCursors, type HookCursorRow } from '../store/hook-cursors.js';
import { groupedWrites } from '../worker/write-batcher.js';
import type { ExecutionServices, TransactionalPrisma } from '../workflow/execution-services.js';
import { connect } from './connections.js';
import type { EngineContext } from './engine-context.js';
import { WorkflowHandle, type HandleBackend } from './handle.js';
import { LocalResults } from './local-results.js';
import { buildNewRun } from './new-run.js';
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
import { FlowControlClient, syncLimits } from './flow-control.js';
import { ScheduleClient } from './schedule-client.js';
import { syncDeclaredSchedules } from './schedule-sync.js';
import { startMany, startRun, type StartManyItem } from './start-runs.js';
import { startBatcher } from './start-batch.js';
import { verifyRuns, type VerifyOptions, type VerifyReport } from './verify.js';

export interface DurableEngineConfig {
  registry: WorkflowRegistry;
  /**
   * The engine's own connection: a Postgres URL (Prisma's `?schema=` is understood) or a pg Pool.
   * Without it every statement goes through `prisma` and wake-ups fall back to polling.
   */
  connection?: string | Pool;
  /** Size of the pool the engine creates from a URL. Default 10. */
  poolSize?: number;
  /**
   * Send the engine's fixed statements as prepared statements on its own pool (parsed and planned
   * once per connection). Default true; set false behind PgBouncer in transaction mode before 1.21.
   */
  preparedStatements?: boolean;
  /** The app's PrismaClient: transactional steps, and statements when there is no connection. */
  prisma?: TransactionalPrisma | null;
  options?: EngineOptions;
}

/**
 * The durable-execution engine, independent of Nest: starts runs, executes the ones its worker
 * claims, and answers questions about them. Each operation lives in its own module (start-runs,
 * run-control, queries); this class wires them to the connections, worker and sweeper.
 */
export class DurableEngine implements HandleBackend {
  readonly options: ResolvedEngineOptions;
  readonly registry: WorkflowRegistry;
  private readonly store: Store;
  private readonly ownedPool: Pool | null;
  private readonly pool: Pool | null;
  private readonly worker: Worker;
  private readonly sweeper: Sweeper;
  private readonly scheduler: Scheduler | null;
  private readonly notifier: Notifier | null;
  private readonly local = new LocalResults();
  private readonly context: EngineContext;
  private readonly telemetry: Telemetry;
  private readonly hookConsumers: HookConsumer[] = [];
  private hooks: HookDispatcher | null = null;
  private started = false;
  /** The engine's clock; the testing kit moves it (virtual time). */
  readonly clock = new EngineClock();
  /** Hooks into step attempts (the testing kit's fault injection); empty in production. */
  readonly stepHooks: StepAttemptHooks = {};
  /** Runtime schedules (create, update, delete, pause, resume, trigger, list); declared ones too. */
  readonly schedules = new ScheduleClient(() => this.context);
  /** Flow control at runtime: queue limits (set, reset, list), key usage, why a run has not started. */
  readonly flowControl = new FlowControlClient(() => this.context);

  constructor(config: DurableEngineConfig) {
    this.options = resolveEngineOptions(config.options);
    this.registry = config.registry;
    const prisma = config.prisma ?? null;
    const conn = connect({ ...config, prisma }, this.options, {
      wake: (queue) => this.worker.wake(queue),
      cancelled: (runId) => this.worker.cancelled(runId),
      cancelRequested: (runId) => this.worker.cancelRequested(runId),
      signal: (runId) => this.worker.signal(runId),
      limitsChanged: () => void this.worker.flow.refresh(),
      reconnected: () => {
        void this.worker.flow.refresh();
        this.worker.wakeAll();
      },
    });
    this.store = conn.store;
    this.ownedPool = conn.ownedPool;
    this.pool = conn.pool;
    this.notifier = conn.notifier;
    this.telemetry = new Telemetry(this.options.telemetry);
    const services: ExecutionServices = {
      store: this.store,
      prisma,
      options: this.options,
      clock: this.clock,
      stepHooks: this.stepHooks,
      writes: groupedWrites(this.store),
      telemetry: this.telemetry,
      leaseStore: conn.leaseStore,
      newRun: (name, input, opts) => buildNewRun(this.registry, this.options, name, input, opts),
    };
    this.worker = new Worker(this.registry, services);
    this.worker.onRunFinished((id) => this.local.resolve(id));
    this.sweeper = new Sweeper(this.store, this.options);
    this.scheduler = this.options.schedules
      ? new Scheduler(this.store, this.registry, this.options, (n) => this.telemetry.metrics.schedulesFired(n))
      : null;
    this.context = {
      registry: this.registry,
      options: this.options,
      store: this.store,
      worker: this.worker,
      local: this.local,
      starts: startBatcher(this.store, { owner: this.options.workerId, ms: this.options.leaseMs }, this.options.appVersion),
      scheduler: this.scheduler,
      telemetry: this.telemetry,
    };
  }

  /**
   * Checks the schema; unless `schedules: false`, syncs the schedules declared on workflows and
   * starts the scheduler; unless `worker: false`, starts claiming, heartbeats, the sweeper and the listener.
   */
  async start(): Promise<void> {
    if (this.started) return;
    await this.checkSchema();
    const limits = await syncLimits(this.context);
    if (limits.length) this.options.logger.log(`declared queue limits synced: ${limits.join(', ')}`);
    await this.telemetry.load(
      { figures: () => queueFigures(this.store), activeRuns: () => this.worker.activeByQueue() },
      this.options.logger,
    );
    if (this.scheduler) {
      const synced = await syncDeclaredSchedules(this.context);
      for (const [what, ids] of Object.entries(synced)) {
        if (ids.length) this.options.logger.log(`declared schedule(s) ${what}: ${ids.join(', ')}`);
      }
    }
    this.started = true;
    this.scheduler?.start();
    if (!this.options.worker) return;
    if (this.notifier) await this.notifier.start();
    else this.options.logger.warn('no connection of its own: wake-ups fall back to polling every pollIntervalMs');
    await this.worker.flow.start();
    this.worker.start();
    this.sweeper.start();
    this.hooks = new HookDispatcher(this.store, this.options, this.hookConsumers);
    this.hooks.start();
    this.options.logger.log(
      `worker ${this.options.workerId} serving ${
        this.worker
          .queueNames()
          .map((q) => `"${q}"`)
          .join(', ') || 'no queues'
      }; ` + `workflows: ${this.registry.names().join(', ') || '(none)'}`,
    );
  }

  /**
   * Tables missing or older than this release: a typed error that says what to run. Newer (a
   * later release migrated them, e.g. during a rolling deploy): a warning, so an instance of the
   * previous release can still restart; schema changes are additive.
   */
  private async checkSchema(): Promise<void> {
    const state = await readSchemaState(this.store.sql);
    const error = schemaStateError(state);
    if (state.status === 'newer')
      this.options.logger.warn(`${error!.message} Starting anyway: this release only uses what it knows of the tables.`);
    else if (error) throw error;
  }

  /** Graceful: drain in-flight runs up to shutdownGraceMs, hand back the rest, close connections. */
  async stop(): Promise<void> {
    if (this.started) {
      this.started = false;
      await this.scheduler?.stop();
      await this.hooks?.stop();
      await this.worker.stop(this.options.shutdownGraceMs);
      await this.sweeper.stop();
      if (this.notifier) await this.notifier.stop();
    }
    await this.ownedPool?.end().catch(() => {});
  }

  /**
   * A lifecycle hook: `handler` gets every event of the given types (run.succeeded, run.failed,
   * run.cancelled, step.retried, lease.lost) after it committed, at least once (a crash or a throw
   * delivers it again; `event.id` tells a redelivery), in history order, from one instance at a
   * time. Read from the run history (`history: true`) by instances with a worker; `consumer` names
   * its durable cursor. Register before start(). The engine never waits for handlers.
   */
  onEvent(types: DurableEventType | DurableEventType[], handler: DurableEventHandler, opts: OnEventOptions): void {
    const c = hookConsumer(types, handler, opts);
    if (this.started)
      throw new InvalidOptionsError(`onEvent("${c.consumer}") after start(): register lifecycle hooks before the engine starts.`);
    if (!this.options.history) {
      throw new InvalidOptionsError(`onEvent("${c.consumer}"): lifecycle hooks read the run history; set the engine option history: true.`);
    }
    if (this.hookConsumers.some((h) => h.consumer === c.consumer)) {
      throw new InvalidOptionsError(`onEvent: the consumer "${c.consumer}" is registered twice; each consumer needs a name of its own.`);
    }
    this.hookConsumers.push(c);
  }

  /** Every lifecycle-hook consumer known to the database: its cursor, lease holder, and events still to read (up to 10 000). */
  hookCursors(): Promise<HookCursorRow[]> {
    return listHookCursors(this.store, 10_000);
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
  async timeMoved(opts: { sweep?: boolean } = {}): Promise<void> {
    if (!this.started) return;
    this.scheduler?.wake();
    if (!this.options.worker) return;
    this.worker.timeMoved();
    if (opts.sweep !== false) await this.sweeper.sweepOnce();
    this.worker.wakeAll();
  }

  /**
   * Calls `listener` each time an execution in this process ends (the run finished, suspended or
   * stopped); returns the function that removes it. The testing kit's settle() waits on it.
   */
  onExecutionEnded(listener: (runId: string) => void): () => void {
    return this.worker.onRunFinished((id) => listener(id));
  }

  /**
   * Replays the unfinished runs (optionally recently finished ones too) against this engine's
   * workflows, reading inside one READ ONLY transaction on the engine's connection; reports the runs
   * the code would fail (see verify.ts). Works without start(): a build about to be deployed checks
   * the runs in the database before any of its instances executes one.
   */
  verify(opts: VerifyOptions = {}): Promise<VerifyReport> {
    if (!this.pool)
      throw new InvalidOptionsError("verify reads through the engine's own connection: pass `connection` (a Postgres URL or pg Pool).");
    return verifyRuns(this.registry, this.pool, opts);
  }

  /** The store the engine sends its statements through, for the library's own tools (the admin API). */
  get storeForTools(): Store {
    return this.store;
  }

  // --- HandleBackend -------------------------------------------------------

  fetchResult(id: string) {
    return getResult(this.store, id);
  }

  waitLocal(id: string, ms: number): Promise<void> {
    return this.local.wait(id, ms);
  }
}
