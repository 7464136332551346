import { DurableEngine, WorkflowRegistry, type EngineOptions, type WorkflowOptions } from 'nestjs-durable';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from './db.js';
import { prismaFor } from './prisma.js';

export type WorkflowFn = (input: any) => Promise<unknown>;

/** Fast settings for tests: short leases and polls so recovery happens in seconds. */
export const FAST: EngineOptions = { leaseMs: 1_500, heartbeatMs: 300, pollIntervalMs: 100, sweepIntervalMs: 200, shutdownGraceMs: 500 };
/**
 * FAST with a 10-s lease, for tests that count executions (a step's calls, 'claimed' rows, lease
 * epochs) and never wait for a lease to expire: a loaded machine pausing past FAST's 1.5 s hands a
 * run to a second execution, as it should, and such a count then fails.
 */
export const STEADY: EngineOptions = { ...FAST, leaseMs: 10_000, heartbeatMs: 1_000 };
/**
 * FAST on a Citus cluster: a 6-s run lease. The lease is also the engine's sessions'
 * idle-in-transaction limit, and in distributed mode every hot statement is a transaction of a few
 * statements: a loaded machine pausing 1.5 s between two of them ended the session in CI.
 */
const FAST_ON_CITUS: EngineOptions = { ...FAST, leaseMs: 6_000, heartbeatMs: 1_000 };

/**
 * Engines without Nest, on their own database. An engine made inside a test is stopped when a later
 * test makes one: each running engine holds its pool and LISTEN connections, and a suite whose
 * engines piled up, beside another suite in the second jest worker, ran the server out of its 100.
 * The first engine (suites use `h.engines[0]` as their client) and engines made in beforeAll live
 * until close().
 */
export class EngineHarness {
  readonly engines: DurableEngine[] = [];
  private readonly madeIn = new Map<DurableEngine, string>();
  readonly prisma;
  readonly pool: pg.Pool;

  private constructor(
    readonly db: TestDatabase,
    private readonly defaults: EngineOptions = FAST,
  ) {
    this.prisma = prismaFor(db.url);
    this.pool = new pg.Pool({ connectionString: db.url, max: 4 });
    // The database is dropped WITH (FORCE) at the end: its idle connections die then.
    this.pool.on('error', () => {});
  }

  /** On a new database; engines get `defaults` (FAST, or STEADY for tests that count executions) under their own options. */
  static async create(label: string, defaults: EngineOptions = FAST): Promise<EngineHarness> {
    return new EngineHarness(await createTestDatabase(label), defaults);
  }

  /** On a database made elsewhere (a Citus cluster's): close() calls its drop(). Engines get FAST_ON_CITUS. */
  static on(db: TestDatabase): EngineHarness {
    return new EngineHarness(db, FAST_ON_CITUS);
  }

  async engine(
    workflows: Record<string, WorkflowFn | [WorkflowFn, WorkflowOptions]>,
    options: EngineOptions = {},
    start = true,
  ): Promise<DurableEngine> {
    const test = expect.getState().currentTestName;
    if (test) await this.stopEnginesOfOtherTests(test);
    const registry = new WorkflowRegistry();
    for (const [name, w] of Object.entries(workflows)) {
      const [fn, opts] = Array.isArray(w) ? w : [w, {}];
      registry.register({ name, queue: opts.queue ?? 'default', options: opts, run: fn });
    }
    const engine = new DurableEngine({
      registry,
      connection: this.db.url,
      prisma: this.prisma as never,
      options: { ...this.defaults, ...options },
    });
    this.engines.push(engine);
    if (test && this.engines.length > 1) this.madeIn.set(engine, test);
    if (start) await engine.start();
    return engine;
  }

  private async stopEnginesOfOtherTests(test: string): Promise<void> {
    const done = [...this.madeIn].filter(([, t]) => t !== test).map(([e]) => e);
    for (const e of done) {
      this.madeIn.delete(e);
      await e.stop().catch(() => {});
    }
  }

  async query<T = any>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pool.query(sql, params)).rows as T[];
  }

  /** Waits until `n` statements on this database wait for a lock (one a test's transaction holds). */
  async lockWaiters(n = 1, timeoutMs = 10_000): Promise<void> {
    const waiting = async () =>
      (
        await this.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
        )
      )[0].n;
    await eventually(async () => (await waiting()) >= n, timeoutMs, `${n} statement(s) waiting for a lock`);
  }

  async close(): Promise<void> {
    for (const e of this.engines) await e.stop().catch(() => {});
    await this.pool.end();
    await this.prisma.$disconnect();
    await this.db.drop();
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls until fn returns a truthy value (or throws after timeoutMs). */
export async function eventually<T>(fn: () => Promise<T>, timeoutMs = 15_000, what = 'condition'): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await fn();
    if (last) return last as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}
