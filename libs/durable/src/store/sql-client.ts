import { createHash } from 'node:crypto';
import type { Client, Pool, PoolClient } from 'pg';

/**
 * The one thing the store needs from a database connection: run a parameterized statement
 * and get its rows. Every statement the store sends returns the rows it touched (RETURNING),
 * so "rows.length" is the affected-row count on every implementation.
 */
export interface SqlClient {
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<T[]>;
}

/**
 * A pg Pool (or a single pg client: checked out of a pool, or a dedicated one). Statements whose text is in `prepared` are
 * sent as named prepared statements: each connection parses and plans them once, which the
 * benchmark showed to be more than half of Postgres' work per statement on the hot path.
 * Leave `prepared` empty behind a pooler that cannot keep prepared statements (PgBouncer in
 * transaction mode before 1.21).
 */
export function pgSqlClient(pool: Pool | PoolClient | Client, prepared: ReadonlySet<string> = new Set()): SqlClient {
  const names = new Map<string, string>();
  const nameOf = (text: string) => {
    let name = names.get(text);
    if (!name) names.set(text, (name = `durable_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`));
    return name;
  };
  return {
    async query<T>(text: string, params: readonly unknown[] = []) {
      const values = params as unknown[];
      const res = prepared.has(text) ? await pool.query({ name: nameOf(text), text, values }) : await pool.query(text, values);
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
