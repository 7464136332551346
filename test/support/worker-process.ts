// What every worker process of the tests does around its own workflows (the entry points
// `*-worker.ts` and `*-main.ts` under test/, bundled by ./child-bundle.mjs and run with node and
// DATABASE_URL set, by WorkerProcess in ./processes.ts): start an engine (a plain DurableEngine or a Nest
// application context), print "ready" once it claims, and stop gracefully on SIGTERM.
import type { INestApplicationContext } from '@nestjs/common';
import { DurableEngine, type DurableEngineConfig } from 'nestjs-durable/engine';

type EngineOptions = NonNullable<DurableEngineConfig['options']>;

/** The database of the process: DATABASE_URL, which the test sets. */
export function databaseUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('a test worker process needs DATABASE_URL (the test database to work on)');
  return url;
}

/** A number from the environment, or `fallback` when the variable is not set. */
export function envNumber(name: string, fallback: number): number {
  const v = process.env[name];
  return v ? Number(v) : fallback;
}

/** Engine options a test may set per process through the environment (WorkerProcess.start's env). */
const FROM_ENV: Partial<Record<keyof EngineOptions, string>> = {
  leaseMs: 'DURABLE_LEASE_MS',
  heartbeatMs: 'DURABLE_HEARTBEAT_MS',
  pollIntervalMs: 'DURABLE_POLL_MS',
  sweepIntervalMs: 'DURABLE_SWEEP_MS',
  shutdownGraceMs: 'DURABLE_GRACE_MS',
  scheduleMisfireMs: 'DURABLE_MISFIRE_MS',
  inMemoryWaitMaxMs: 'DURABLE_IN_MEMORY_WAIT_MS',
  suspendGraceMs: 'DURABLE_SUSPEND_GRACE_MS',
  concurrency: 'DURABLE_CONCURRENCY',
};

/** `defaults`, each numeric option replaced by its variable (FROM_ENV) when that is set; warnings and errors to stderr. */
export function engineOptions(defaults: EngineOptions): EngineOptions {
  const options: EngineOptions = { logger: { log() {}, warn: (m) => console.warn(m), error: (m) => console.error(m) }, ...defaults };
  for (const [key, name] of Object.entries(FROM_ENV) as [keyof EngineOptions, string][]) {
    if (process.env[name]) (options as Record<string, unknown>)[key] = Number(process.env[name]);
  }
  return options;
}

/** SIGTERM: `stop`, then exit 0 (a graceful stop the test can tell from a crash by the exit code). */
function exitOnSigterm(stop: () => Promise<unknown>): void {
  process.on('SIGTERM', () => {
    void stop().then(
      () => process.exit(0),
      (err: Error) => {
        console.error(`graceful stop failed: ${err.stack ?? err.message}`);
        process.exit(1);
      },
    );
  });
}

/**
 * A plain DurableEngine (no Nest) on DATABASE_URL: started, stopped on SIGTERM (then `close`, for
 * the pools of the worker's own), and "ready" printed. Returns the engine.
 */
export async function serveEngine(
  config: Omit<DurableEngineConfig, 'connection'>,
  close: () => Promise<unknown> = async () => {},
): Promise<DurableEngine> {
  const engine = new DurableEngine({ connection: databaseUrl(), ...config });
  await engine.start();
  exitOnSigterm(() => engine.stop().then(close));
  process.stdout.write(`ready ${process.pid}\n`);
  return engine;
}

/** A Nest application context of `module` (whose DurableModule reads DATABASE_URL): initialized, with shutdown hooks, and "ready" printed. */
export async function serveNestApp(
  module: unknown,
  logger: ('error' | 'warn' | 'log')[] = ['error', 'warn', 'log'],
): Promise<INestApplicationContext> {
  const { NestFactory } = await import('@nestjs/core'); // not loaded by the plain-engine workers
  const app = await NestFactory.createApplicationContext(module as never, { logger });
  app.enableShutdownHooks();
  await app.init();
  process.stdout.write(`ready ${process.pid}\n`);
  return app;
}
