import { DurableEngine, WorkflowRegistry, type EngineOptions, type WorkflowOptions } from 'nestjs-durable';
import pg from 'pg';
import { createTestDatabase, type TestDatabase } from './db.js';
import { prismaFor } from './prisma.js';

export type WorkflowFn = (input: any) => Promise<unknown>;

/** Fast settings for tests: short leases and polls so recovery happens in seconds. */
export const FAST: EngineOptions = { leaseMs: 1_500, heartbeatMs: 300, pollIntervalMs: 100, sweepIntervalMs: 200, shutdownGraceMs: 500 };

/** An engine without Nest, on its own database, with the given workflows. */
export class EngineHarness {
  readonly engines: DurableEngine[] = [];
  readonly prisma;
  readonly pool: pg.Pool;

  private constructor(readonly db: TestDatabase) {
    this.prisma = prismaFor(db.url);
    this.pool = new pg.Pool({ connectionString: db.url, max: 4 });
    // The database is dropped WITH (FORCE) at the end: its idle connections die then.
    this.pool.on('error', () => {});
  }

  static async create(label: string): Promise<EngineHarness> {
    return new EngineHarness(await createTestDatabase(label));
  }

  async engine(
    workflows: Record<string, WorkflowFn | [WorkflowFn, WorkflowOptions]>,
    options: EngineOptions = {},
    start = true,
  ): Promise<DurableEngine> {
    const registry = new WorkflowRegistry();
    for (const [name, w] of Object.entries(workflows)) {
      const [fn, opts] = Array.isArray(w) ? w : [w, {}];
      registry.register({ name, queue: opts.queue ?? 'default', options: opts, run: fn });
    }
    const engine = new DurableEngine({ registry, connection: this.db.url, prisma: this.prisma as never, options: { ...FAST, ...options } });
    this.engines.push(engine);
    if (start) await engine.start();
    return engine;
  }

  async query<T = any>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.pool.query(sql, params)).rows as T[];
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
export async function eventually<T>(fn: () => Promise<T>, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    last = await fn();
    if (last) return last;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}
