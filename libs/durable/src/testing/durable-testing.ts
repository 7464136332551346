import type { INestApplication, INestApplicationContext, LoggerService, LogLevel, ModuleMetadata } from '@nestjs/common';
import { Test, type TestingModule, type TestingModuleBuilder } from '@nestjs/testing';
import { InvalidOptionsError, RunNotFoundError, TestWaitTimeoutError } from '../errors/index.js';
import type { DurableEngine } from '../engine/durable-engine.js';
import type { RunView } from '../engine/run-view.js';
import type { StartOptions } from '../engine/new-run.js';
import type { WorkflowHandle } from '../engine/handle.js';
import type { RunStatus } from '../store/rows.js';
import { moveVirtualClock, readVirtualClock } from './virtual-clock.js';
import { DurableRuntime } from '../nest/durable-runtime.js';
import { DURABLE_OPTIONS, type DurableModuleOptions } from '../nest/module-definition.js';
import { WorkflowClient } from '../nest/workflow-client.js';
import { durationMs, type Duration } from './duration.js';
import { StepFaults, type StepFault, type StepFaultOptions } from './faults.js';
import { ExecutionEnds, LOOK_AGAIN_MS, settleEngine } from './settle.js';
import { checkSteps, isDurableStep, type ExpectedStep } from './step-expectations.js';
import { openTestDatabase, type DurableTestDatabase, type TestDatabaseOption, type TestSchemaOptions } from './test-database.js';

/** Options of createDurableTestingModule(). */
export interface DurableTestingOptions {
  /** 'embedded' (default unless DURABLE_TEST_DATABASE_URL is set) or { url } of a server; see TestDatabaseOption. */
  database?: TestDatabaseOption;
  /** What each test database is made of (default: the package's schema.sql). */
  schema?: TestSchemaOptions;
  /** Data folder of the embedded server. Default node_modules/.cache/nestjs-durable/postgres. */
  embeddedDir?: string;
  /** Changes to the testing module before it compiles: `(b) => b.overrideProvider(Gateway).useValue(fake)`. */
  override?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
  /**
   * true: a full INestApplication (HTTP, for supertest); default: an application context (no HTTP
   * server). An object also makes one, created with `rawBody` (for routes that check a signature
   * over the bytes received) and passed to `configure` before init, for what the app's main.ts does
   * to it (middleware, headers, pipes).
   */
  http?: boolean | TestingHttpOptions;
  /** Step retry back-offs: 'skip' (default: a retry follows at once) or 'real'. */
  retryDelays?: 'skip' | 'real';
  /** Nest's logger for the app: default ['error', 'warn']; false for none. */
  logger?: LoggerService | LogLevel[] | false;
}

/** The HTTP app of createDurableTestingModule(…, { http: { … } }). */
export interface TestingHttpOptions {
  /** Keep each request's raw body as `req.rawBody` (Nest's `rawBody` application option). */
  rawBody?: boolean;
  /** Called with the app before `init()`: apply what the app's main.ts applies. */
  configure?: (app: INestApplication) => void;
}

/** How long the kit's waits (settle, waitFor, result) wait at most, by default. */
const DEFAULT_WAIT_MS = 10_000;
/** Timers advanceTime() fires one by one (in time order) before it jumps straight to the target. */
const MAX_TIMER_STEPS = 1_000;
/** How often result() and waitFor() wake the worker while they wait. */
const POKE_MS = 50;
/** "Never" for the safety re-check of waits without a timer: virtual time would step through every one. */
const TEN_YEARS_MS = 10 * 365 * 86_400_000;

/**
 * Boots your Nest module with the engine against a fresh test database (an embedded Postgres, or
 * a server you name), with virtual time, step fault injection and run assertions. One per test
 * file (beforeAll), closed in afterAll: `close()` stops the app and drops the database.
 */
export async function createDurableTestingModule(
  metadata: ModuleMetadata | ((db: DurableTestDatabase) => ModuleMetadata),
  options: DurableTestingOptions = {},
): Promise<DurableTestingModule> {
  const { db, close } = await openTestDatabase(options.database, options.schema, options.embeddedDir);
  const previousUrl = process.env.DATABASE_URL;
  process.env.DATABASE_URL = db.url; // what a PrismaService (and the engine, by default) connects to
  const restore = async () => {
    if (previousUrl === undefined) delete process.env.DATABASE_URL;
    else process.env.DATABASE_URL = previousUrl;
    await close();
  };
  let app: INestApplicationContext | undefined;
  try {
    let builder = Test.createTestingModule(typeof metadata === 'function' ? metadata(db) : metadata);
    if (options.override) builder = options.override(builder);
    const moduleRef = await builder.compile();
    testEngineOptions(moduleRef, db.url);
    const logger = options.logger ?? ['error', 'warn'];
    if (options.http) {
      const http = options.http === true ? {} : options.http;
      const nest = moduleRef.createNestApplication({ logger, rawBody: http.rawBody });
      http.configure?.(nest);
      app = nest;
    } else {
      app = moduleRef;
      moduleRef.useLogger(logger);
    }
    await app.init();
    return new DurableTestingModule(moduleRef, app, db, options, restore);
  } catch (err) {
    await app?.close().catch(() => {});
    await restore().catch(() => {});
    throw err;
  }
}

/**
 * The engine options a test needs, set on the module's options before the engine is built: the
 * test database, every wait suspended at once (state in the database, so settle() is exact), no
 * retention (virtual weeks would delete finished runs), no periodic re-check of message waits.
 */
function testEngineOptions(moduleRef: TestingModule, url: string): void {
  let o: DurableModuleOptions;
  try {
    o = moduleRef.get<DurableModuleOptions>(DURABLE_OPTIONS, { strict: false });
  } catch {
    throw new InvalidOptionsError(
      'createDurableTestingModule(): the module has no DurableModule; import DurableModule.forRoot(…) (or the module that does).',
    );
  }
  if (o.connection === undefined || typeof o.connection === 'string') o.connection = url;
  Object.assign(o, {
    retentionMs: null,
    inMemoryWaitMaxMs: 0,
    suspendGraceMs: 0,
    waitRecheckMs: TEN_YEARS_MS,
    shutdownGraceMs: Math.min(o.shutdownGraceMs ?? 2_000, 2_000),
    worker: true,
  });
}

/** A booted test app: its client and engine, virtual time, waits, step assertions, faults. */
export class DurableTestingModule {
  /** Workflow client of the app (start, send, getRun, cancel, …). */
  readonly client: WorkflowClient;
  /** The engine inside the app. */
  readonly engine: DurableEngine;
  private readonly faults = new StepFaults();
  private closed = false;

  constructor(
    readonly moduleRef: TestingModule,
    /** The app (an INestApplication with `http: true`). */
    readonly app: INestApplicationContext,
    /** The test database. */
    readonly db: DurableTestDatabase,
    options: DurableTestingOptions,
    private readonly release: () => Promise<void>,
  ) {
    this.client = moduleRef.get(WorkflowClient, { strict: false });
    this.engine = moduleRef.get(DurableRuntime, { strict: false }).engine;
    this.engine.stepHooks.beforeAttempt = this.faults.hook;
    if ((options.retryDelays ?? 'skip') === 'skip') this.engine.stepHooks.retryDelayMs = () => 0;
  }

  /** A provider of the app (strict: false), e.g. `t.get(PrismaService)`. */
  get<T = unknown>(token: unknown): T {
    return this.moduleRef.get<T>(token as never, { strict: false });
  }

  /** The HTTP app (createDurableTestingModule(…, { http: true })), e.g. for supertest. */
  get http(): INestApplication {
    if (!('getHttpServer' in this.app))
      throw new InvalidOptionsError('testing: pass { http: true } to createDurableTestingModule() for an HTTP app.');
    return this.app as INestApplication;
  }

  /** Starts a run (WorkflowClient.start by name). */
  start<T = unknown>(workflowName: string, input?: unknown, opts?: StartOptions): Promise<WorkflowHandle<T>> {
    return this.client.start<T>(workflowName, input, opts);
  }

  /** Starts a run and waits for its result (see result()). */
  async execute<T = unknown>(workflowName: string, input?: unknown, opts: StartOptions & { timeoutMs?: number } = {}): Promise<T> {
    const { timeoutMs, ...start } = opts;
    const h = await this.start<T>(workflowName, input, start);
    return this.result<T>(h.id, { timeoutMs });
  }

  /** A run's output once it ends (WorkflowFailedError / WorkflowCancelledError otherwise); waits up to timeoutMs (10 s). */
  async result<T = unknown>(runId: string, opts: { timeoutMs?: number } = {}): Promise<T> {
    const poke = this.pokeWhileWaiting();
    try {
      return await this.engine.handle<T>(runId).result({ timeoutMs: opts.timeoutMs ?? DEFAULT_WAIT_MS });
    } finally {
      clearInterval(poke);
    }
  }

  /**
   * While a test waits, wakes the worker every POKE_MS: a timer that comes due in real time after a
   * jump of virtual time (a wait that began a few ms after advanceTime's target) would otherwise wait
   * for the next poll, as it does in production.
   */
  private pokeWhileWaiting(): NodeJS.Timeout {
    const t = setInterval(() => void this.engine.timeMoved({ sweep: false }).catch(() => {}), POKE_MS);
    t.unref?.();
    return t;
  }

  /** Sends a message to a run's Durable.recv(topic). */
  send(runId: string, topic: string, payload?: unknown): Promise<void> {
    return this.client.send(runId, topic, payload);
  }

  /** The run with its steps; throws RunNotFoundError if there is none. */
  async run(runId: string): Promise<RunView> {
    const run = await this.client.getRun(runId);
    if (!run) throw new RunNotFoundError(runId);
    return run;
  }

  /** A run's steps in order (the engine's durable.* steps left out unless `durable: true`). */
  async steps(runId: string, opts: { durable?: boolean } = {}): Promise<RunView['steps']> {
    const { steps } = await this.run(runId);
    return opts.durable ? steps : steps.filter((s) => !isDurableStep(s));
  }

  /** Asserts the run's steps (names, or { name, status, attempts }); a readable StepSequenceMismatchError otherwise. Returns the run. */
  async expectSteps(runId: string, expected: ExpectedStep[], opts: { durable?: boolean } = {}): Promise<RunView> {
    const run = await this.run(runId);
    checkSteps(run, expected, opts);
    return run;
  }

  /**
   * Waits until the run has a status (one of a list), and/or has recorded a step of that name
   * (a wait step too: 'durable.recv:shipment'). Returns the run; TestWaitTimeoutError after timeoutMs (10 s).
   */
  async waitFor(runId: string, until: { status?: RunStatus | RunStatus[]; step?: string; timeoutMs?: number }): Promise<RunView> {
    const statuses = until.status === undefined ? null : Array.isArray(until.status) ? until.status : [until.status];
    const end = Date.now() + (until.timeoutMs ?? DEFAULT_WAIT_MS);
    const poke = this.pokeWhileWaiting();
    const ends = new ExecutionEnds(this.engine);
    try {
      return await this.poll(runId, until, statuses, end, ends);
    } finally {
      clearInterval(poke);
      ends.close();
    }
  }

  private async poll(
    runId: string,
    until: { step?: string; timeoutMs?: number },
    statuses: RunStatus[] | null,
    end: number,
    ends: ExecutionEnds,
  ): Promise<RunView> {
    for (;;) {
      const run = await this.client.getRun(runId);
      const ok = run && (!statuses || statuses.includes(run.status)) && (!until.step || run.steps.some((s) => s.name === until.step));
      if (ok) return run;
      if (Date.now() > end) {
        const what = [statuses && `status ${statuses.join(' or ')}`, until.step && `step "${until.step}"`].filter(Boolean).join(' and ');
        throw new TestWaitTimeoutError(
          `Run ${runId} did not reach ${what} within ${until.timeoutMs ?? DEFAULT_WAIT_MS} ms: ` +
            (run ? `it is ${run.status}, steps: ${run.steps.map((s) => `${s.name} (${s.status})`).join(', ') || 'none'}` : 'no such run'),
        );
      }
      await ends.next(LOOK_AGAIN_MS);
    }
  }

  /** Makes attempts of a step (by name; a compensation is 'compensate:<step>') fail: retries and compensation under test. */
  failStep(step: string, opts?: StepFaultOptions): StepFault {
    return this.faults.add(step, opts);
  }

  /** Removes every injected fault. */
  clearFaults(): void {
    this.faults.clear();
  }

  /** Virtual now (epoch ms): what Durable.now() returns in a new step. */
  now(): number {
    return this.engine.clock.now();
  }

  /**
   * Moves virtual time forward by `duration` ('7d', '60s', ms): the timers that come due meanwhile
   * (sleeps, recv timeouts, delayed starts, deadlines, schedules) fire in time order, each once the
   * work before it has settled; resolves when the work due by the new time has settled.
   */
  async advanceTime(duration: Duration, opts: { timeoutMs?: number } = {}): Promise<void> {
    const ms = durationMs(duration, 'advanceTime()');
    await this.settle(opts);
    const store = this.engine.storeForTools;
    const target = (await readVirtualClock(store)).nowMs + ms;
    for (let i = 0; ; i++) {
      const { nextTimerMs, nextDeadlineMs } = await readVirtualClock(store);
      const last = nextTimerMs === null || nextTimerMs > target || i >= MAX_TIMER_STEPS;
      // 1 ms past the timer: its time read back from SQL as epoch ms may round a microsecond short of it.
      const to = last ? target : Math.min(target, Math.floor(nextTimerMs) + 1);
      await this.moveClock(to, nextDeadlineMs !== null && nextDeadlineMs <= to);
      await this.settle(opts);
      if (last) return;
    }
  }

  /** Moves both clocks to `toMs`; the sweeper runs at once only when a deadline passes. */
  private async moveClock(toMs: number, deadlinePassed: boolean): Promise<void> {
    const { offsetMs } = await moveVirtualClock(this.engine.storeForTools, toMs);
    this.engine.clock.setOffset(offsetMs);
    await this.engine.timeMoved({ sweep: deadlinePassed });
  }

  /**
   * Resolves when the engine has nothing left to do now: no run executing, none due (started,
   * woken by a message or a timer), no deadline passed, no schedule due. Runs waiting for a message,
   * a child or a later time are settled. Work that is due is handed to the engine at once, not left
   * to its poll. TestWaitTimeoutError (naming the busy runs) after timeoutMs (10 s).
   */
  settle(opts: { timeoutMs?: number } = {}): Promise<void> {
    return settleEngine(this.engine, opts.timeoutMs ?? DEFAULT_WAIT_MS);
  }

  /** Stops the app (graceful), drops the test database, leaves the embedded server. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.faults.clear();
    try {
      await this.app.close();
    } finally {
      await this.release();
    }
  }
}
