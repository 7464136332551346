import { ConfigurableModuleBuilder, type InjectionToken } from '@nestjs/common';
import type { Pool } from 'pg';
import type { EngineOptions } from '../config/options.js';
import type { DurableAdminOptions } from './admin/admin-options.js';
import type { TransactionalPrisma } from '../workflow/execution-services.js';
import type { SignalDefinition } from '../definitions/signals.js';
import type { CallbackOptions } from '../config/callback-options.js';

/**
 * The module's own endpoints, known statically (they decide its controllers): the signals it
 * mounts (each `POST <signalPath>/<name>/:runId`, behind the signal's guards) and where the
 * callback URLs of Durable.callback point (`POST <callbackPath>/:token`).
 */
export interface DurableEndpointOptions {
  /** The app's signals (defineSignal): an endpoint each, payload checks, and the dashboard's Signals panel. */
  signals?: SignalDefinition<any>[];
  /** Default `durable/signals`. */
  signalPath?: string;
  /** Default `durable/callbacks`; `false`: no callback endpoint (call WorkflowClient.completeCallback yourself). */
  callbackPath?: string | false;
}

/** The endpoint options as the runtime and the controllers read them. */
export const DURABLE_ENDPOINTS = Symbol('DURABLE_ENDPOINTS');

/** Options of DurableModule.forRoot() / forRootAsync(). */
export interface DurableModuleOptions extends Omit<EngineOptions, 'logger' | 'signals' | 'callbacks'> {
  /**
   * Callback URLs (Durable.callback): the signing secret and the app's public base URL (with your
   * global prefix, if any: `https://shop.example.com/api`). The URLs' path is the module's
   * `callbackPath`; `path` here only when `callbackPath: false` (your own route receives them).
   */
  callbacks?: CallbackOptions;
  /** The provider token of the app's PrismaClient (e.g. PrismaService), or the client itself. */
  prisma: InjectionToken | TransactionalPrisma;
  /**
   * The engine's own connection (claims, heartbeats, checkpoints, LISTEN for wake-ups): a
   * Postgres URL or a pg Pool. Default: process.env.DATABASE_URL. `false`: send every
   * statement through Prisma and poll for work (no LISTEN).
   */
  connection?: string | Pool | false;
  /** Size of the engine's pool when `connection` is a URL. Default 10. */
  poolSize?: number;
  /** Prepared statements on the engine's pool (default true; false behind PgBouncer < 1.21 in transaction mode). */
  preparedStatements?: boolean;
  /** Log through Nest's Logger (default true). */
  logging?: boolean;
}

export const {
  ConfigurableModuleClass,
  MODULE_OPTIONS_TOKEN: DURABLE_OPTIONS,
  OPTIONS_TYPE,
  ASYNC_OPTIONS_TYPE,
} = new ConfigurableModuleBuilder<DurableModuleOptions>({ moduleName: 'Durable' })
  .setClassMethodName('forRoot')
  // `admin` and the endpoint options are extras so that they are known statically (forRoot and
  // forRootAsync alike): they decide which controllers the module has. DurableModule's
  // forRoot/forRootAsync apply them.
  .setExtras(
    {
      isGlobal: true,
      admin: undefined as DurableAdminOptions | undefined,
      signals: undefined as DurableEndpointOptions['signals'],
      signalPath: undefined as string | undefined,
      callbackPath: undefined as string | false | undefined,
    },
    (definition, extras) => ({
      ...definition,
      global: extras.isGlobal,
    }),
  )
  .build();
