import type { Pool, PoolClient } from 'pg';

/**
 * The one thing the store needs from a database connection: run a parameterized statement
 * and get its rows. Every statement the store sends returns the rows it touched (RETURNING),
 * so "rows.length" is the affected-row count on every implementation.
 */
export interface SqlClient {
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
}

/** A pg Pool (or a single checked-out pg client). */
export function pgSqlClient(pool: Pool | PoolClient): SqlClient {
  return {
    async query<T>(text: string, params: readonly unknown[] = []) {
      const res = await pool.query(text, params as unknown[]);
      return res.rows as T[];
    },
  };
}

/** The subset of a Prisma client (or interactive-transaction client) the store uses. */
export interface PrismaLike {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
}

/**
 * Statements sent through Prisma: used for writes that must join the caller's Prisma
 * transaction (start in tx, transactional-step checkpoints), and for everything when the
 * module has no connection string of its own.
 */
export function prismaSqlClient(prisma: PrismaLike): SqlClient {
  return {
    async query<T>(text: string, params: readonly unknown[] = []) {
      return (await prisma.$queryRawUnsafe<T[]>(text, ...params)) ?? [];
    },
  };
}

export function isPrismaLike(x: unknown): x is PrismaLike {
  return typeof (x as PrismaLike | null)?.$queryRawUnsafe === 'function';
}
