import { InvalidOptionsError } from '../errors/index.js';
import { mysqlErrno } from './mysql/sql.js';
import type { SqlClient } from './sql-client.js';
import type { Statement } from './statement.js';

/**
 * Session settings of every connection the engine opens to a MySQL-family server: UTC (DATETIME
 * columns hold UTC, the driver reads and writes them as UTC) and READ COMMITTED, under which
 * `FOR UPDATE SKIP LOCKED` locks only the rows it returns and InnoDB takes no gap locks.
 */
const SESSION = ["SET time_zone = '+00:00'", 'SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED'];

/** MySQL error numbers a transaction is retried after: InnoDB rolled it back (1213) or a lock wait timed out (1205). */
export const DEADLOCK = 1213;
export const LOCK_WAIT_TIMEOUT = 1205;
/** A transaction is tried at most this many times when the server reports a deadlock or a lock-wait timeout. */
const TRIES = 5;

/** How often the server made this engine try a transaction again (the admin API shows it). */
export interface ContentionCounts {
  deadlocks: number;
  lockWaitTimeouts: number;
}

/**
 * What the store uses of the `mariadb` driver (an optional peer dependency, imported only by engines
 * on a MySQL-family server): its own types stay out of the library's published declarations.
 */
interface Queryable {
  query(sql: string, values?: unknown[]): Promise<unknown>;
}
interface MysqlConnection extends Queryable {
  beginTransaction(): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  release(): Promise<void>;
}
export interface MysqlPool extends Queryable {
  getConnection(): Promise<MysqlConnection>;
  end(): Promise<void>;
}
/** The `mariadb` driver's pool settings this library sets (a subset of its PoolConfig). */
export type MysqlPoolConfig = Record<string, unknown>;

/**
 * MariaDB's idle-in-transaction limit for a session (whole seconds, at least 1), as an init
 * statement MySQL also accepts: MariaDB runs the executable comment, MySQL (which has no such
 * variable) skips it and sets only a user variable.
 */
const idleTransactionLimit = (ms: number) =>
  `SET @durable_session = 1 /*M!100300 , SESSION idle_transaction_timeout = ${Math.max(1, Math.ceil(ms / 1000))} */`;

/**
 * Pool settings for a mysql:// or mariadb:// URL. `idleTransactionMs`: a transaction idle longer
 * than this is ended by the server with its connection (the engine's own pool: its transactions
 * last milliseconds, so one idle for a lease belongs to a process that froze inside it, and its row
 * locks must not hold up other workers' heartbeats — PostgreSQL's pool sets
 * idle_in_transaction_session_timeout for the same reason).
 */
export function mysqlPoolConfig(url: string, size: number, idleTransactionMs?: number): MysqlPoolConfig {
  const u = new URL(url);
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  return {
    host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1',
    port: u.port ? Number(u.port) : 3306,
    user: decodeURIComponent(u.username) || undefined,
    password: u.password ? decodeURIComponent(u.password) : undefined,
    database: database || undefined,
    connectionLimit: size,
    minimumIdle: 0,
    // The pool pings a connection idle longer than this before lending it (the driver's default, 500 ms,
    // doubled an idle poll's round trips); a connection found dead by a statement is retried anyway.
    minDelayValidation: 5_000,
    acquireTimeout: 10_000,
    connectTimeout: 5_000,
    timezone: 'Z',
    initSql: idleTransactionMs ? [...SESSION, idleTransactionLimit(idleTransactionMs)] : SESSION,
    // JSON columns come back as text (parsed by the store, so a JSON string is never mistaken for JSON text).
    autoJsonMap: false,
    bigIntAsNumber: false,
    insertIdAsNumber: true,
    foundRows: true,
  };
}

const textOf = (s: Statement | string) => (typeof s === 'string' ? s : s.text);

/**
 * The store's SqlClient over a `mariadb` pool (created on first use: the driver is loaded only by
 * engines that talk to a MySQL-family server). `transaction` runs on one connection and is tried
 * again, from the start, when InnoDB reports a deadlock or a lock-wait timeout (the server rolled
 * the work back, so nothing of the failed try remains); `counts` says how often. Hints its
 * statements send (SqlClient.notify) reach `onNotice` when their transaction commits.
 */
export function mysqlSqlClient(
  pool: () => Promise<MysqlPool>,
  onNotice: (channel: string, payload: string) => void = () => {},
  onRetry: (counts: Readonly<ContentionCounts>, err: Error) => void = () => {},
  counts: ContentionCounts = { deadlocks: 0, lockWaitTimeouts: 0 },
): SqlClient & { counts: ContentionCounts; useVirtualClock(): void } {
  /** On in a test database of the testing kit only (see VIRTUAL_CLOCK): production sends not one statement more. */
  let virtualClock = false;
  /** A statement outside a transaction: on a connection of its own when the virtual clock must be set first. */
  const single = async <T>(run: (q: Queryable) => Promise<T>): Promise<T> => {
    const p = await pool();
    if (!virtualClock) return run(p);
    const conn = await p.getConnection();
    try {
      await conn.query(SET_VIRTUAL_CLOCK);
      return await run(conn);
    } finally {
      await conn.release().catch(() => {});
    }
  };
  /** Statements on `q`; hints go to `notices` (delivered at commit), or at once outside a transaction (null). */
  const on = (q: Queryable, notices: Array<[string, string]> | null): SqlClient =>
    queryableClient(q, (channel, payload) => (notices ? void notices.push([channel, payload]) : onNotice(channel, payload)));
  const deliver = (notices: Array<[string, string]>) => {
    for (const [channel, payload] of notices) onNotice(channel, payload);
  };
  return {
    dialect: 'mysql',
    counts,
    notify: onNotice,
    useVirtualClock: () => void (virtualClock = true),
    async query<T>(s: Statement | string, params: readonly unknown[] = []) {
      return single((q) => on(q, null).query<T>(s, params));
    },
    async execute(s: Statement | string, params: readonly unknown[] = []) {
      return single((q) => on(q, null).execute(s, params));
    },
    async transaction<T>(fn: (sql: SqlClient) => Promise<T>): Promise<T> {
      for (let attempt = 1; ; attempt++) {
        const conn = await (await pool()).getConnection();
        const notices: Array<[string, string]> = [];
        try {
          await conn.beginTransaction();
          if (virtualClock) await conn.query(SET_VIRTUAL_CLOCK);
          const result = await fn(on(conn, notices));
          await conn.commit();
          deliver(notices);
          return result;
        } catch (err) {
          await conn.rollback().catch(() => {});
          const code = mysqlErrno(err);
          if (code === DEADLOCK) counts.deadlocks++;
          else if (code === LOCK_WAIT_TIMEOUT) counts.lockWaitTimeouts++;
          else throw err;
          onRetry(counts, err as Error);
          if (attempt >= TRIES) throw err;
        } finally {
          await conn.release().catch(() => {});
        }
      }
    },
  };
}

/**
 * The testing kit's virtual clock on MariaDB: a test database holds the one-row table
 * durable_virtual_clock (offset_ms), and the engine, having seen it at startup, sets the session's
 * `timestamp` before each transaction and each statement outside one, to the real time plus that
 * offset. NOW()/UTC_TIMESTAMP() then read virtual time (fixed for the transaction, as PostgreSQL's
 * now() is); SYSDATE() stays real, which is what the offset is added to.
 */
export const VIRTUAL_CLOCK_TABLE = 'durable_virtual_clock';
const SET_VIRTUAL_CLOCK = `SET @@timestamp = UNIX_TIMESTAMP(SYSDATE(6)) + (SELECT offset_ms FROM ${VIRTUAL_CLOCK_TABLE}) / 1000`;

/**
 * A SqlClient over one connection (or anything with `query`) that the caller holds, e.g. inside a
 * transaction it began itself; `transaction` runs on the same connection.
 */
export function queryableClient(q: Queryable, notify: (channel: string, payload: string) => void = () => {}): SqlClient {
  const client: SqlClient = {
    dialect: 'mysql',
    notify,
    async query<T>(s: Statement | string, params: readonly unknown[] = []) {
      const rows = await q.query(textOf(s), params as unknown[]);
      return (Array.isArray(rows) ? rows : []) as T[];
    },
    async execute(s: Statement | string, params: readonly unknown[] = []) {
      const res = (await q.query(textOf(s), params as unknown[])) as { affectedRows?: number };
      return Number(res.affectedRows ?? 0);
    },
    transaction: <T>(fn: (sql: SqlClient) => Promise<T>) => fn(client),
  };
  return client;
}

/** A pool made on first use from `config` (the driver is imported then), and a way to end it. */
export function lazyMysqlPool(config: MysqlPoolConfig): { get: () => Promise<MysqlPool>; end: () => Promise<void> } {
  let made: Promise<MysqlPool> | null = null;
  return {
    get: () =>
      (made ??= import('mariadb').then(
        (m) => m.createPool(config) as unknown as MysqlPool,
        (err: unknown) => {
          made = null;
          throw new InvalidOptionsError(
            `A mysql:// or mariadb:// connection needs the mariadb driver (the one @prisma/adapter-mariadb uses): npm install mariadb ` +
              `(${(err as Error).message}).`,
          );
        },
      )),
    end: async () => {
      if (made) await (await made).end();
    },
  };
}
