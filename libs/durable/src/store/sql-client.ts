import type { Client, Pool, PoolClient } from 'pg';
import type { Statement } from './statement.js';

/**
 * The one thing the store needs from a database connection: run a parameterized statement
 * and get its rows. Every statement the store sends returns the rows it touched (RETURNING),
 * so "rows.length" is the affected-row count on every implementation.
 */
export interface SqlClient {
  query<T = Record<string, unknown>>(statement: Statement | string, params?: readonly unknown[]): Promise<T[]>;
  /**
   * Runs `fn` in one transaction on one connection (committed when it resolves, rolled back when
   * it throws). Only the flow-controlled claim needs one (store/flow-claim.ts).
   */
  transaction<T>(fn: (sql: SqlClient) => Promise<T>): Promise<T>;
}

/**
 * A pg Pool (or one pg client: checked out of a pool, or a dedicated one). With `prepared`, fixed
 * statements are sent as named prepared statements; leave it off behind a pooler that cannot keep
 * prepared statements (PgBouncer in transaction mode before 1.21).
 */
export function pgSqlClient(pool: Pool | PoolClient | Client, opts: { prepared: boolean }): SqlClient {
  return {
    async transaction<T>(fn: (sql: SqlClient) => Promise<T>): Promise<T> {
      const isPool = 'totalCount' in pool;
      const client = isPool ? await (pool as Pool).connect() : (pool as PoolClient | Client);
      let broken: Error | undefined;
      // A checked-out connection that dies between two statements (the server restarts, the network
      // cuts) emits 'error' on the client, which the pool no longer listens to: without this listener the
      // process would crash on an unhandled 'error' event. The next statement then fails and rolls back.
      const onError = (e: Error) => (broken = e);
      if (isPool) client.on('error', onError);
      try {
        await client.query('BEGIN');
        const result = await fn(pgSqlClient(client, opts));
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch((e: Error) => (broken = e));
        throw err;
      } finally {
        // A connection that could not even roll back is discarded, not handed to the next statement.
        if (isPool) {
          client.removeListener('error', onError);
          (client as PoolClient).release(broken);
        }
      }
    },
    async query<T>(s: Statement | string, params: readonly unknown[] = []) {
      const values = params as unknown[];
      const res =
        typeof s === 'string'
          ? await pool.query(s, values)
          : opts.prepared
            ? await pool.query({ name: s.name, text: s.text, values })
            : await pool.query(s.text, values);
      return res.rows as T[];
    },
  };
}

/** The subset of a Prisma client (or interactive-transaction client) the store uses. */
export interface PrismaLike {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
}

/** A PrismaClient (not a transaction client): it can open an interactive transaction. */
interface PrismaWithTransactions extends PrismaLike {
  $transaction<T>(fn: (tx: PrismaLike) => Promise<T>): Promise<T>;
}

/**
 * Statements sent through Prisma: writes that must join the caller's Prisma transaction (start in
 * a tx, transactional-step checkpoints), and everything when the engine has no connection of its own.
 */
export function prismaSqlClient(prisma: PrismaLike): SqlClient {
  return {
    async transaction<T>(fn: (sql: SqlClient) => Promise<T>): Promise<T> {
      const p = prisma as Partial<PrismaWithTransactions>;
      // A transaction client (a caller's tx) is one transaction already: run inside it.
      if (typeof p.$transaction !== 'function') return fn(prismaSqlClient(prisma));
      return (prisma as PrismaWithTransactions).$transaction((tx) => fn(prismaSqlClient(tx)));
    },
    async query<T>(s: Statement | string, params: readonly unknown[] = []) {
      return (await prisma.$queryRawUnsafe<T[]>(typeof s === 'string' ? s : s.text, ...params)) ?? [];
    },
  };
}
