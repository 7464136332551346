import type { SqlClient, PrismaLike } from '../store/sql-client.js';
import type { ResolvedEngineOptions } from './options.js';
import type { StepTransactionOptions } from './definitions.js';

/** A Prisma client able to open interactive transactions (transactional steps). */
export interface TransactionalPrisma extends PrismaLike {
  $transaction<R>(fn: (tx: PrismaLike) => Promise<R>, options?: StepTransactionOptions): Promise<R>;
}

/** What an execution needs from the engine around it. */
export interface ExecutionServices {
  sql: SqlClient;
  prisma: TransactionalPrisma | null;
  options: ResolvedEngineOptions;
}

export function isTransactionalPrisma(x: unknown): x is TransactionalPrisma {
  return typeof (x as TransactionalPrisma | null)?.$transaction === 'function' && typeof (x as PrismaLike).$queryRawUnsafe === 'function';
}
