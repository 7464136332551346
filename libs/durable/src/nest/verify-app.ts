import type { DynamicModule, LoggerService, LogLevel, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { VERIFY_MODE_ENV } from '../config/limits.js';
import type { VerifyOptions, VerifyReport } from '../engine/verify.js';
import { DurableRuntime } from './durable-runtime.js';
import { rootModuleOf, type RootModule } from './root-module.js';

/** Options of verifyApp(): those of verify, and the logger of the Nest application context it boots. */
export interface VerifyAppOptions extends VerifyOptions {
  /** Nest's logger for the boot (default: errors and warnings only). */
  logger?: LoggerService | LogLevel[] | false;
}

/**
 * Boots the app's root module the way `npx nestjs-durable verify` does — a Nest application context
 * with DurableModule in verify mode (workflows registered; no worker, scheduler or schedule sync;
 * the module's connection opened only for the READ ONLY transaction) — replays every unfinished run
 * (and, with `finishedWithinMs`, recently finished ones) against the workflows of this build, closes
 * the app and returns the report. For a pre-deploy script or a test:
 * `const report = await verifyApp(AppModule); if (!report.ok) process.exit(1);`
 *
 * The root module as the app builds it: a module class, a dynamic module (`AppModule.forRoot()`, or
 * a promise of one), or a class whose static `forRoot()` imports DurableModule while the bare class
 * does not (then `forRoot()` is called with no arguments, as `main.ts` would).
 */
export async function verifyApp(
  appModule: Type<unknown> | DynamicModule | Promise<DynamicModule>,
  opts: VerifyAppOptions = {},
): Promise<VerifyReport> {
  const { logger, ...verify } = opts;
  const previous = process.env[VERIFY_MODE_ENV];
  process.env[VERIFY_MODE_ENV] = '1';
  let app: Awaited<ReturnType<typeof NestFactory.createApplicationContext>> | undefined;
  try {
    // forRoot() runs in verify mode too: a factory that reads the environment sees NESTJS_DURABLE_VERIFY.
    const root: RootModule = await rootModuleOf(await appModule);
    app = await NestFactory.createApplicationContext(root, { logger: logger ?? ['error', 'warn'], abortOnError: false });
    let runtime: DurableRuntime;
    try {
      runtime = app.get(DurableRuntime, { strict: false });
    } catch {
      throw new Error(
        `the app module ${nameOf(root)} does not import DurableModule: pass the module the app boots ` +
          '(e.g. AppModule.forRoot(), or with the command line --call forRoot, or --export a dynamic module or factory)',
      );
    }
    return await runtime.engine.verify(verify);
  } finally {
    await app?.close();
    if (previous === undefined) delete process.env[VERIFY_MODE_ENV];
    else process.env[VERIFY_MODE_ENV] = previous;
  }
}

const nameOf = (m: RootModule) => (typeof m === 'function' ? m.name : `${m.module.name} (dynamic)`);
