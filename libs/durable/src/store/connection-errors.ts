/** Error codes meaning "the database could not be reached / dropped the connection" (not a failed statement). */
const CONNECTION_CODES = new Set([
  // Node sockets (pg, the Prisma pg adapter)
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // Postgres: too_many_connections (the server is full: a connection frees up soon); the SQLSTATEs of
  // a server going away or turned standby are meansServerGone()'s
  '53300',
  // nestjs-durable's NoPrimaryError: none of a multi-host URL's hosts is a primary yet (mid-failover)
  'NO_PRIMARY',
  // a statement of the engine issued before a failover was noticed (store/guarded-client.ts): retried
  'PRIMARY_CHANGED',
  // Prisma: can't reach, timed out reaching, server closed the connection
  'P1001',
  'P1002',
  'P1017',
  // the mariadb driver (MariaDB, MySQL): the socket closed, the pool could not lend a connection in time
  'ER_SOCKET_UNEXPECTED_CLOSE',
  'ER_CONNECTION_ALREADY_CLOSED',
  'ER_CLOSING_POOL',
  'ER_GET_CONNECTION_TIMEOUT',
  'ER_CONNECTION_TIMEOUT',
  'ER_CONN_PVT_OPEN_TIMEOUT',
  'ER_CONN_TIMEOUT',
  'ER_SOCKET_TIMEOUT',
  'ER_SOCKET_DESTROYED',
  // MySQL-family server errors: too many connections (1040), shutdown in progress (1053), connection
  // killed (1927), server gone away (2006), lost during a query (2013)
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
]);

/** MySQL-family error numbers that mean the same (the mariadb driver's `errno`; through Prisma, its message's `Code`). */
const MYSQL_CONNECTION_ERRNOS = new Set([1040, 1053, 1927, 2006, 2013, 45009, 45028]);

const CONNECTION_MESSAGE =
  /Connection terminated|connection ended|socket has unexpectedly been closed|Cannot execute new commands: connection closed|Connection lost|server has gone away|Client has encountered a connection error|timeout exceeded when trying to connect|Can't reach database server|server closed the connection|the database system is (?:shutting down|starting up|in recovery mode)|terminating connection due to administrator command|too many clients already|remaining connection slots are reserved|cannot execute \w+ in a read-only transaction|Code: `(?:08\w{3}|57P0[123]|53300|25006)`/i;

/**
 * SQLSTATEs a server sends when a connection must not be used again: the server is a standby now
 * (25006 read_only_sql_transaction: a failover demoted it, or the URL names a standby), is shutting
 * down or restarting (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now), or the
 * connection failed (class 08). A pooled connection that met one is closed instead of being handed
 * to the next statement; a write that failed with one may be tried again (isConnectionError).
 */
export function meansServerGone(sqlState: unknown): boolean {
  return typeof sqlState === 'string' && (/^57P0[123]$/.test(sqlState) || sqlState === '25006' || /^08[0-9A-Z]{3}$/.test(sqlState));
}

/**
 * True when `err` (or one of its causes) says the database was unreachable or dropped the
 * connection — a restart, a failover, a network blip — rather than that a statement failed.
 * Such a write may simply be tried again once the database is back.
 */
export function isConnectionError(err: unknown): boolean {
  let e: unknown = err;
  for (let depth = 0; e && typeof e === 'object' && depth < 5; depth++) {
    const { code, meta, message, errno, sqlState } = e as {
      code?: unknown;
      meta?: { code?: unknown; driverAdapterError?: { cause?: { originalCode?: unknown } } };
      message?: unknown;
      errno?: unknown;
      sqlState?: unknown;
    };
    for (const c of [code, meta?.code, sqlState]) {
      if (typeof c === 'string' && (CONNECTION_CODES.has(c) || meansServerGone(c))) return true;
    }
    for (const n of [errno, Number(meta?.driverAdapterError?.cause?.originalCode)]) {
      if (typeof n === 'number' && MYSQL_CONNECTION_ERRNOS.has(n)) return true;
    }
    if (typeof message === 'string' && CONNECTION_MESSAGE.test(message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
