import type pg from 'pg';
import { DurableError, IdempotencyConflictError, IllegalTransitionError, RunNotFoundError, SchemaMissingError } from '../errors/index.js';
import { runStore, withHistory, type NewRun } from '../store/run-store.js';
import { waitStore } from '../store/wait-store.js';
import { FIXED_STATEMENTS } from '../store/fixed-statements.js';
import { pgSqlClient, prismaSqlClient, type PrismaLike, type SqlClient } from '../store/sql-client.js';
import { encode } from './codec.js';
import { getEvent } from './events.js';
import { getRunEvents, type RunEvent } from './run-events.js';
import { createPool, pgConfigFromUrl } from './connection.js';
import { WorkflowHandle, type HandleBackend } from './handle.js';
import { Notifier } from './notifier.js';
import { resolveEngineOptions, type EngineOptions, type ResolvedEngineOptions } from './options.js';
import type { WorkflowRegistry } from './registry.js';
import type { ExecutionServices, TransactionalPrisma } from './services.js';
import { Sweeper } from './sweeper.js';
import { buildNewRun, MAX_ID_LENGTH, type StartOptions } from './new-run.js';
import { toRunView, type RunView } from './run-view.js';
import { Worker } from './worker.js';
import { groupedWrites } from './write-batcher.js';

export type { StartOptions } from './new-run.js';
export type { RunView } from './run-view.js';

export interface DurableEngineConfig {
  registry: WorkflowRegistry;
  /**
   * The engine's own connection: a Postgres URL (Prisma's `?schema=` is understood) or a pg Pool.
   * Without it every statement goes through `prisma` and wake-ups fall back to polling.
   */
  connection?: string | pg.Pool;
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


/** Options of send(). */
export interface SendOptions {
  /** A Prisma interactive-transaction client: the message exists iff that transaction commits. */
  tx?: PrismaLike;
  /** Deduplication key per run: a second send with the same key is ignored. */
  idempotencyKey?: string;
}

/** One run of startMany(): `{ workflow, input, options? }` (`{ name, input, opts? }` is accepted too). */
export type StartManyItem =
  | { workflow: string; input?: unknown; options?: Omit<StartOptions, 'tx'> }
  | { name: string; input?: unknown; opts?: Omit<StartOptions, 'tx'> };



/**
 * The durable-execution engine, independent of Nest: starts runs, executes the ones its
 * worker claims, and answers questions about them.
 */
export class DurableEngine implements HandleBackend {
  readonly options: ResolvedEngineOptions;
  readonly registry: WorkflowRegistry;
  private readonly sql: SqlClient;
  private readonly pool: pg.Pool | null;
  private readonly ownsPool: boolean;
  private readonly prisma: TransactionalPrisma | null;
  private readonly worker: Worker;
  private readonly sweeper: Sweeper;
  private readonly notifier: Notifier | null;
  private readonly localWaiters = new Map<string, Set<() => void>>();
  private started = false;

  constructor(config: DurableEngineConfig) {
    this.options = resolveEngineOptions(config.options);
    this.registry = config.registry;
    this.prisma = config.prisma ?? null;
    const { logger } = this.options;
    const conn = config.connection;
    if (typeof conn === 'string') {
      const pgConfig = pgConfigFromUrl(conn);
      this.pool = createPool(pgConfig, config.poolSize ?? 10, logger);
      this.ownsPool = true;
      this.notifier = this.options.worker ? new Notifier(pgConfig, this.notifierHandlers(), logger) : null;
    } else if (conn) {
      this.pool = conn;
      this.ownsPool = false;
      const o = conn.options as pg.PoolConfig;
      this.notifier = this.options.worker ? new Notifier({ ...o }, this.notifierHandlers(), logger) : null;
    } else {
      this.pool = null;
      this.ownsPool = false;
      this.notifier = null;
    }
    const prepared = config.preparedStatements === false ? undefined : FIXED_STATEMENTS;
    if (this.pool) this.sql = withHistory(pgSqlClient(this.pool, prepared), this.options.history);
    else if (this.prisma) this.sql = withHistory(prismaSqlClient(this.prisma), this.options.history);
    else throw new DurableError('NO_CONNECTION', 'nestjs-durable needs a database: pass `connection` (a Postgres URL or pg Pool) or `prisma`.');
    const services: ExecutionServices = {
      sql: this.sql, prisma: this.prisma, options: this.options, writes: groupedWrites(this.sql), leaseSql: this.leaseSql(prepared),
      newRun: (name, input, opts) => buildNewRun(this.registry, this.options, name, input, opts),
    };
    this.worker = new Worker(this.registry, services);
    this.worker.onRunFinished((id) => this.resolveLocal(id));
    this.sweeper = new Sweeper(this.sql, this.options);
  }

  /** The heartbeat's connection: the LISTEN session while it is up (one SqlClient per session). */
  private leaseSql(prepared: ReadonlySet<string> | undefined): (() => SqlClient | null) | undefined {
    const notifier = this.notifier;
    if (!notifier) return undefined;
    let cached: { session: pg.Client; sql: SqlClient } | null = null;
    return () => {
      const session = notifier.session();
      if (!session) return null;
      if (cached?.session !== session) cached = { session, sql: withHistory(pgSqlClient(session, prepared), this.options.history) };
      return cached.sql;
    };
  }

  private notifierHandlers() {
    return {
      wake: (queue: string) => this.worker.wake(queue),
      cancelled: (runId: string) => this.worker.cancelled(runId),
      signal: (runId: string) => this.worker.signal(runId),
      reconnected: () => this.worker.wakeAll(),
    };
  }

  /** Checks the schema, then (unless `worker: false`) starts claiming, heartbeats, the sweeper and the listener. */
  async start(): Promise<void> {
    if (this.started) return;
    const missing = await runStore.schemaCheck(this.sql);
    if (missing.length) throw new SchemaMissingError(missing);
    this.started = true;
    if (!this.options.worker) return;
    if (this.notifier) await this.notifier.start();
    else this.options.logger.warn('no connection of its own: wake-ups fall back to polling every pollIntervalMs');
    this.worker.start();
    this.sweeper.start();
    this.options.logger.log(
      `worker ${this.options.workerId} serving ${this.worker.queueNames().map((q) => `"${q}"`).join(', ') || 'no queues'}; ` +
        `workflows: ${this.registry.names().join(', ') || '(none)'}`,
    );
  }

  /** Graceful: drain in-flight runs up to shutdownGraceMs, hand back the rest, close connections. */
  async stop(): Promise<void> {
    if (!this.started) {
      if (this.ownsPool) await this.pool!.end().catch(() => {});
      return;
    }
    this.started = false;
    await this.worker.stop(this.options.shutdownGraceMs);
    await this.sweeper.stop();
    if (this.notifier) await this.notifier.stop();
    if (this.ownsPool) await this.pool!.end().catch(() => {});
  }

  /** Starts a run (see StartOptions). Unknown workflow → UnknownWorkflowError listing the known names. */
  async startRun<T = unknown>(workflowName: string, input: unknown, opts: StartOptions = {}): Promise<WorkflowHandle<T>> {
    const run = buildNewRun(this.registry, this.options, workflowName, input, opts);
    const immediate = !opts.tx && !opts.runAt && !opts.delayMs;
    if (immediate && this.worker.reserveSlot(run.queue)) {
      // In-process fast path: the row is inserted already leased to this worker, and executes now.
      let claimed;
      try {
        claimed = await runStore.insertRunClaimed(this.sql, run, this.options.workerId, this.options.leaseMs);
      } catch (err) {
        this.worker.releaseSlot(run.queue);
        throw err;
      }
      if (claimed) this.worker.execute(claimed, run.queue);
      else {
        this.worker.releaseSlot(run.queue);
        await this.checkExisting(this.sql, [run]);
      }
    } else {
      const sql = opts.tx ? this.txClient(opts.tx) : this.sql;
      if (!(await runStore.insertRun(sql, run))) await this.checkExisting(sql, [run]);
    }
    return new WorkflowHandle<T>(run.id, run.workflowName, this);
  }

  /** Starts many runs with one INSERT (optionally inside the caller's Prisma transaction). */
  async startMany(items: StartManyItem[], opts: { tx?: PrismaLike } = {}): Promise<WorkflowHandle[]> {
    if (!Array.isArray(items)) throw new DurableError('INVALID_ARGUMENT', 'startMany expects an array of { workflow, input, options? }.');
    if (!items.length) return [];
    const runs = items.map((it, i) => {
      const item = it as { workflow?: unknown; name?: unknown; input?: unknown; options?: StartOptions; opts?: StartOptions } | null;
      const name = item?.workflow ?? item?.name;
      if (typeof name !== 'string') throw new DurableError('INVALID_ARGUMENT', `startMany: item ${i} needs a "workflow" name.`);
      return buildNewRun(this.registry, this.options, name, item!.input, item!.options ?? item!.opts ?? {});
    });
    const ids = new Set<string>();
    for (const r of runs) {
      if (ids.has(r.id)) throw new DurableError('INVALID_ARGUMENT', `startMany: id "${r.id}" appears twice in one call.`);
      ids.add(r.id);
    }
    const sql = opts.tx ? this.txClient(opts.tx) : this.sql;
    const inserted = await runStore.insertRuns(sql, runs, this.options.appVersion);
    const existing = runs.filter((r) => !inserted.has(r.id));
    if (existing.length) await this.checkExisting(sql, existing);
    return runs.map((r) => new WorkflowHandle(r.id, r.workflowName, this));
  }

  /** A handle to an existing run (no query). */
  handle<T = unknown>(id: string, workflowName = ''): WorkflowHandle<T> {
    return new WorkflowHandle<T>(id, workflowName, this);
  }

  async getRun(id: string): Promise<RunView | null> {
    if (typeof id !== 'string' || !id || id.length > MAX_ID_LENGTH) return null;
    const row = await runStore.getRun(this.sql, id);
    return row ? toRunView(row) : null;
  }

  /**
   * Cancels an unfinished run (idempotent for a CANCELLED one), and its unfinished child runs
   * unless the option cancelChildren is false. An executing run stops at its next step boundary;
   * its running step sees Durable.signal() abort.
   */
  async cancel(id: string): Promise<void> {
    const cascade = this.options.cancelChildren;
    const ids = await cancelRetryingDeadlocks(() => runStore.cancelTree(this.sql, id, cascade));
    if (cascade && ids.includes(id)) {
      // Children whose creation committed while the first statement waited for the parent's row
      // were not in its snapshot; a second pass (a new snapshot) cancels them too.
      ids.push(...(await cancelRetryingDeadlocks(() => runStore.cancelTree(this.sql, id, cascade))));
    }
    for (const c of ids) {
      this.worker.cancelled(c);
      this.resolveLocal(c);
    }
    if (ids.includes(id)) return;
    const status = await runStore.status(this.sql, id);
    if (!status) throw new RunNotFoundError(id);
    if (status !== 'CANCELLED') throw new IllegalTransitionError(id, status, 'cancel', ['PENDING', 'RUNNING', 'WAITING']);
  }

  /** Resumes a CANCELLED or FAILED run from its last checkpoint (a failed final step runs again). */
  async resume(id: string): Promise<void> {
    if (await runStore.resume(this.sql, id, this.options.cancelChildren)) return;
    const status = await runStore.status(this.sql, id);
    if (!status) throw new RunNotFoundError(id);
    throw new IllegalTransitionError(id, status, 'resume', ['CANCELLED', 'FAILED']);
  }

  /**
   * Sends a message to a run: its Durable.recv(topic) receives it, exactly once, in send order per
   * topic (it may be sent before the run reaches recv). With `tx` (a Prisma interactive-transaction
   * client) the message exists iff that transaction commits. A repeated `idempotencyKey` for the
   * same run is ignored. A run waiting for a message wakes at once. Unknown run → RunNotFoundError.
   */
  async send(runId: string, topic: string, payload: unknown, opts: SendOptions = {}): Promise<void> {
    if (typeof runId !== 'string' || !runId || runId.length > MAX_ID_LENGTH) throw new RunNotFoundError(String(runId));
    if (typeof topic !== 'string' || !topic || topic.length > 256) {
      throw new DurableError('INVALID_ARGUMENT', `send(): the topic must be a non-empty string of at most 256 characters (got ${JSON.stringify(topic)}).`);
    }
    const key = opts.idempotencyKey ?? null;
    if (key !== null && (typeof key !== 'string' || !key || key.length > MAX_ID_LENGTH)) {
      throw new DurableError('INVALID_ARGUMENT', `send(): idempotencyKey must be a non-empty string of at most ${MAX_ID_LENGTH} characters.`);
    }
    const encoded = encode(payload, { where: `message "${topic}" to run ${runId}`, maxBytes: this.options.maxPayloadBytes });
    const sql = opts.tx ? this.txClient(opts.tx) : this.sql;
    const r = await waitStore.send(sql, { runId, topic, payload: encoded, idempotencyKey: key });
    if (!r.found) throw new RunNotFoundError(runId);
  }

  /**
   * The latest value the run published with Durable.setEvent(key); if none yet, waits for it up to
   * `timeoutMs` (default 60 s) and returns null then — or at once when the run ended without it.
   */
  getEvent<T = unknown>(runId: string, key: string, opts: { timeoutMs?: number } = {}): Promise<T | null> {
    return getEvent<T>(this.sql, runId, key, opts.timeoutMs ?? 60_000);
  }

  /** The run's history (created, claimed, suspended, woken, step_failed, completed, …), oldest first. */
  getRunEvents(runId: string, opts: { limit?: number } = {}): Promise<RunEvent[]> {
    return getRunEvents(this.sql, runId, Math.max(1, Math.min(opts.limit ?? 1000, 10_000)));
  }

  private txClient(tx: PrismaLike): SqlClient {
    return withHistory(prismaSqlClient(tx), this.options.history);
  }

  /** Runs one sweep now (tests, admin). */
  sweepNow() {
    return this.sweeper.sweepOnce();
  }

  /** The connection the engine sends its statements through, for the library's own tools (the admin API). */
  get sqlClient(): SqlClient {
    return this.sql;
  }

  // --- HandleBackend -------------------------------------------------------

  fetchResult(id: string) {
    return runStore.getResult(this.sql, id);
  }

  waitLocal(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let set = this.localWaiters.get(id);
      if (!set) this.localWaiters.set(id, (set = new Set()));
      const done = () => {
        clearTimeout(timer);
        set!.delete(done);
        if (!set!.size) this.localWaiters.delete(id);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
    });
  }

  private resolveLocal(id: string): void {
    const set = this.localWaiters.get(id);
    if (set) for (const done of [...set]) done();
  }

  // --- helpers ---------------------------------------------------------------



  private async checkExisting(sql: SqlClient, runs: NewRun[]): Promise<void> {
    const found = await runStore.runIdentities(sql, runs.map((r) => r.id));
    for (const r of runs) {
      const f = found.get(r.id);
      if (f && f.workflowName !== r.workflowName) throw new IdempotencyConflictError(r.id, f.workflowName, r.workflowName);
    }
  }
}

/**
 * A cancel cascading over a tree of runs locks parents before children, a child finishing locks
 * itself then its parent: Postgres may abort one of the two as a deadlock (40P01). Try again.
 */
async function cancelRetryingDeadlocks<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if ((err as { code?: string }).code !== '40P01' || attempt >= 3) throw err;
    }
  }
}


