import type { NewRun } from '../store/run-store.js';
import type { SqlClient, PrismaLike } from '../store/sql-client.js';
import type { ResolvedEngineOptions } from './options.js';
import type { StepTransactionOptions } from './definitions.js';
import type { ExecutionWrites } from './write-batcher.js';

/** A Prisma client able to open interactive transactions (transactional steps). */
export interface TransactionalPrisma extends PrismaLike {
  $transaction<R>(fn: (tx: PrismaLike) => Promise<R>, options?: StepTransactionOptions): Promise<R>;
}

/** What an execution needs from the engine around it. */
export interface ExecutionServices {
  sql: SqlClient;
  prisma: TransactionalPrisma | null;
  options: ResolvedEngineOptions;
  /** Step checkpoints and run ends, fenced, with group commit across concurrent executions. */
  writes: ExecutionWrites;
  /** A connection kept for lease renewal (the LISTEN session) while it is up; the heartbeat falls back to `sql`. */
  leaseSql?: () => SqlClient | null;
  /**
   * Builds a validated run to insert (child workflows): the engine's checks and defaults for
   * workflow name, queue, priority, timeout and input encoding.
   */
  newRun?: (
    workflowName: string,
    input: unknown,
    opts: { id: string; queue?: string; priority?: number; timeoutMs?: number | null; delayMs?: number },
  ) => NewRun;
}

export function isTransactionalPrisma(x: unknown): x is TransactionalPrisma {
  return typeof (x as TransactionalPrisma | null)?.$transaction === 'function' && typeof (x as PrismaLike).$queryRawUnsafe === 'function';
}
