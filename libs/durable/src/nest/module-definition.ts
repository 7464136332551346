import { ConfigurableModuleBuilder, type InjectionToken } from '@nestjs/common';
import type { Pool } from 'pg';
import type { EngineOptions } from '../config/options.js';
import type { DurableAdminOptions } from './admin/admin-options.js';
import type { TransactionalPrisma } from '../workflow/execution-services.js';

/** Options of DurableModule.forRoot() / forRootAsync(). */
export interface DurableModuleOptions extends Omit<EngineOptions, 'logger'> {
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
  // `admin` is an extra so that it is known statically (forRoot and forRootAsync alike): it
  // decides which controllers the module has. DurableModule's forRoot/forRootAsync apply it.
  .setExtras({ isGlobal: true, admin: undefined as DurableAdminOptions | undefined }, (definition, extras) => ({
    ...definition,
    global: extras.isGlobal,
  }))
  .build();
