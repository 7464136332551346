import type { Pool } from 'pg';
import { EngineClock, type StepAttemptHooks } from '../config/clock.js';
import { InvalidOptionsError } from '../errors/index.js';
import { resolveEngineOptions, type EngineOptions, type ResolvedEngineOptions } from '../config/options.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import { checkServer, readSchemaState, schemaStateError } from '../store/schema-version.js';
import { queueFigures } from '../store/queue-figures.js';
import type { Store } from '../store/store.js';
import { Telemetry } from '../telemetry/telemetry.js';
import type { Notifier } from '../worker/notifier.js';
import type { NodeListeners } from '../worker/node-listeners.js';
import { Scheduler } from '../worker/scheduler.js';
import { Sweeper } from '../worker/sweeper.js';
import { Worker } from '../worker/worker.js';
import { HookDispatcher } from '../worker/hook-dispatcher.js';
import { checkHookConsumerNames } from '../store/partitioned-hooks.js';
import {
  hookConsumer,
  type DurableEventHandler,
  type DurableEventType,
  type HookConsumer,
  type OnEventOptions,
} from '../definitions/hooks.js';
import { groupedWrites } from '../worker/write-batcher.js';
import type { ExecutionServices, TransactionalPrisma } from '../workflow/execution-services.js';
import { connect, type EngineConnections } from './connections.js';
import type { EngineContext } from './engine-context.js';
import { LocalResults } from './local-results.js';
import { buildNewRun } from './new-run.js';
import { syncLimits } from './flow-control.js';
import { syncDeclaredSchedules } from './schedule-sync.js';
import { startBatcher } from './start-batch.js';
import { readLayout } from './distributed-mode.js';

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
 * The running parts of a DurableEngine and their lifecycle: the connections, the worker, sweeper,
 * scheduler, listener and hook dispatcher, wired together from the config, started and stopped in
 * order. DurableEngine is the API in front of it.
 */
export class EngineRuntime {
  readonly options: ResolvedEngineOptions;
  readonly registry: WorkflowRegistry;
  readonly store: Store;
  private readonly ownedPool: { end(): Promise<void> } | null;
  /** The heartbeat's and sweeper's own connections (MySQL-family workers), else null. */
  private readonly sweepStore: Store | null;
  readonly pool: Pool | null;
  readonly worker: Worker;
  private readonly sweeper: Sweeper;
  private readonly scheduler: Scheduler | null;
  private readonly notifier: Notifier | null;
  private readonly nodeListeners: NodeListeners | null;
  private readonly wakeupNote: EngineConnections['wakeupNote'];
  readonly local = new LocalResults();
  /** Readers of runs' streams in this process, woken when a chunk of the run is written (or the run ends). */
  readonly streamWaits = new LocalResults();
  readonly context: EngineContext;
  private readonly telemetry: Telemetry;
  private readonly hookConsumers: HookConsumer[] = [];
  private hooks: HookDispatcher | null = null;
  private started = false;
  /** The engine's clock; the testing kit moves it (virtual time). */
  readonly clock = new EngineClock();
  /** Hooks into step attempts (the testing kit's fault injection); empty in production. */
  readonly stepHooks: StepAttemptHooks = {};

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
      streamed: (runId) => this.streamWaits.resolve(runId),
      reconnected: () => {
        void this.worker.flow.refresh();
        this.worker.wakeAll();
      },
      primaryChanged: () => this.worker.primaryChanged(),
    });
    this.store = conn.store;
    if (this.options.context?.settings && this.store.sql.dialect === 'mysql') {
      void conn.ownedPool?.end().catch(() => {});
      throw new InvalidOptionsError(
        'context.settings (SET LOCAL for row-level security) needs PostgreSQL: MariaDB has no row-level security. ' +
          'Remove it and filter by Durable.context() in your queries (restore and Durable.context() work on MariaDB).',
      );
    }
    this.ownedPool = conn.ownedPool;
    this.pool = conn.pool;
    this.notifier = conn.notifier;
    this.nodeListeners = conn.nodeListeners;
    this.wakeupNote = conn.wakeupNote;
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
      streamWritten: (runId) => this.streamWaits.resolve(runId),
      runDeleted: (runId, output) => this.local.deletedRun(runId, output),
      runEnded: (runId, end) => this.local.resolve(runId, end),
      newRun: (name, input, opts) => buildNewRun(this.registry, this.options, name, input, opts),
    };
    this.worker = new Worker(this.registry, services);
    this.worker.onRunFinished((id) => {
      this.local.resolve(id);
      this.streamWaits.resolve(id);
    });
    this.sweepStore = conn.sweepStore;
    this.sweeper = new Sweeper(conn.sweepStore ?? this.store, this.options);
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

  /** DurableEngine.start(). */
  async start(): Promise<void> {
    if (this.started) return;
    await this.checkSchema();
    checkHookConsumerNames(
      this.store,
      this.hookConsumers.map((c) => c.consumer),
    );
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
    else if (this.wakeupNote) this.options.logger[this.wakeupNote.level](this.wakeupNote.text);
    if (this.store.layout.partitions !== null) await this.nodeListeners?.start();
    await this.worker.flow.start();
    this.worker.start();
    this.sweeper.start();
    this.hooks = new HookDispatcher(this.store, this.options, this.hookConsumers);
    await this.hooks.start();
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
    const serverNote = await checkServer(this.store.sql, this.options.allowUntestedMysql);
    if (serverNote) this.options.logger.warn(serverNote);
    const state = await readSchemaState(this.store.sql);
    await readLayout(this.store);
    const { partitions } = this.store.layout;
    if (partitions !== null) {
      this.options.logger.log(`distributed mode: runs spread over ${partitions} partitions`);
    }
    // A MariaDB test database of the testing kit: the engine's sessions follow its virtual clock from now on.
    if (state.status === 'current' && state.virtualClock)
      for (const store of [this.store, this.sweepStore]) (store?.sql as { useVirtualClock?: () => void } | undefined)?.useVirtualClock?.();
    const error = schemaStateError(state);
    if (state.status === 'newer')
      this.options.logger.warn(`${error!.message} Starting anyway: this release only uses what it knows of the tables.`);
    else if (error) throw error;
  }

  /** DurableEngine.stop(). */
  async stop(): Promise<void> {
    if (this.started) {
      this.started = false;
      await this.scheduler?.stop();
      await this.hooks?.stop();
      await this.worker.stop(this.options.shutdownGraceMs);
      await this.sweeper.stop();
      if (this.notifier) await this.notifier.stop();
      await this.nodeListeners?.stop();
    }
    await this.ownedPool?.end().catch(() => {});
  }

  /** DurableEngine.onEvent(): registers a lifecycle-hook consumer (before start()). */
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

  /** DurableEngine.timeMoved(). */
  async timeMoved(opts: { sweep?: boolean } = {}): Promise<void> {
    if (!this.started) return;
    this.scheduler?.wake();
    if (!this.options.worker) return;
    this.worker.timeMoved();
    if (opts.sweep !== false) await this.sweeper.sweepOnce();
    this.worker.wakeAll();
  }
}
