import type { Client, Pool, PoolClient } from 'pg';
import { dialectOfPrisma, type Dialect } from './dialect.js';
import type { Statement } from './statement.js';
import { withArrayLiterals } from './pg-arrays.js';

/**
 * The one thing the store needs from a database connection: run a parameterized statement
 * and get its rows. On PostgreSQL every statement the store sends returns the rows it touched
 * (RETURNING); MySQL-family databases have no RETURNING, so their statements that change rows
 * go through `execute` (the affected-row count).
 */
export interface SqlClient {
  /** The SQL the connection speaks: the store picks its statements by it. */
  readonly dialect: Dialect;
  query<T = Record<string, unknown>>(statement: Statement | string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs a statement that changes rows; resolves to how many it matched. */
  execute(statement: Statement | string, params?: readonly unknown[]): Promise<number>;
  /**
   * A hint to this process's engine (a run became due, a run was signalled or cancelled), on the
   * channels of sql-fragments.ts. MySQL-family databases have no LISTEN/NOTIFY: their statements
   * send hints through this, delivered when the transaction they belong to commits (at once outside
   * one). PostgreSQL statements use pg_notify instead, which reaches every instance.
   */
  notify?(channel: string, payload: string): void;
  /**
   * Runs `fn` in one transaction on one connection (committed when it resolves, rolled back when
   * it throws). Only the flow-controlled claim needs one (store/flow-claim.ts).
   */
  transaction<T>(fn: (sql: SqlClient) => Promise<T>): Promise<T>;
}

/**
 * A pg Pool (or one pg client: checked out of a pool, or a dedicated one). With `prepared`, fixed
 * statements are sent as named prepared statements; leave it off behind a pooler that cannot keep
 * prepared statements (PgBouncer in transaction mode before 1.21). `within`: the connection is in a
 * transaction already (the client transaction() hands its callback), so a transaction asked of it runs inside that one.
 */
export function pgSqlClient(pool: Pool | PoolClient | Client, opts: { prepared: boolean; within?: boolean }): SqlClient {
  const send = (s: Statement | string, params: readonly unknown[]) => {
    const values = withArrayLiterals(params);
    return typeof s === 'string'
      ? pool.query(s, values)
      : opts.prepared
        ? pool.query({ name: s.name, text: s.text, values })
        : pool.query(s.text, values);
  };
  const sql: SqlClient = {
    dialect: 'postgres',
    async transaction<T>(fn: (sql: SqlClient) => Promise<T>): Promise<T> {
      if (opts.within) return fn(sql);
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
        const result = await fn(pgSqlClient(client, { ...opts, within: true }));
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
      return (await send(s, params)).rows as T[];
    },
    async execute(s: Statement | string, params: readonly unknown[] = []) {
      return (await send(s, params)).rowCount ?? 0;
    },
  };
  return sql;
}

/** The subset of a Prisma client (or interactive-transaction client) the store uses. */
export interface PrismaLike {
  $queryRawUnsafe<T = unknown>(query: string, ...values: unknown[]): Promise<T>;
  $executeRawUnsafe(query: string, ...values: unknown[]): Promise<number>;
}

/** A PrismaClient (not a transaction client): it can open an interactive transaction. */
interface PrismaWithTransactions extends PrismaLike {
  $transaction<T>(fn: (tx: PrismaLike) => Promise<T>): Promise<T>;
}

/**
 * Statements sent through Prisma: writes that must join the caller's Prisma transaction (start in
 * a tx, transactional-step checkpoints), and everything when the engine has no connection of its own.
 */
export function prismaSqlClient(
  prisma: PrismaLike,
  dialect: Dialect = dialectOfPrisma(prisma),
  notify?: (channel: string, payload: string) => void,
  within = false,
): SqlClient {
  return {
    dialect,
    notify,
    async transaction<T>(fn: (sql: SqlClient) => Promise<T>): Promise<T> {
      const p = prisma as Partial<PrismaWithTransactions>;
      // A transaction client (`within`: a caller's tx, or one opened here) is one transaction already: run inside it.
      // Prisma's own nested $transaction would add a savepoint and its release, two round trips, to every statement group.
      if (within || typeof p.$transaction !== 'function') return fn(prismaSqlClient(prisma, dialect, notify, true));
      // Hints wait for the commit (a claim they trigger must see the rows).
      const notices: Array<[string, string]> = [];
      const result = await (prisma as PrismaWithTransactions).$transaction((tx) =>
        fn(prismaSqlClient(tx, dialect, notify && ((channel, payload) => void notices.push([channel, payload])), true)),
      );
      for (const [channel, payload] of notices) notify?.(channel, payload);
      return result;
    },
    async query<T>(s: Statement | string, params: readonly unknown[] = []) {
      return (await prisma.$queryRawUnsafe<T[]>(typeof s === 'string' ? s : s.text, ...params)) ?? [];
    },
    async execute(s: Statement | string, params: readonly unknown[] = []) {
      return prisma.$executeRawUnsafe(typeof s === 'string' ? s : s.text, ...params);
    },
  };
}
