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
  // Postgres: admin_shutdown, crash_shutdown, cannot_connect_now (restart, failover); class 08 below;
  // too_many_connections (the server is full: a connection frees up soon)
  '57P01',
  '57P02',
  '57P03',
  '53300',
  // read_only_sql_transaction: the server is (now) a standby — a failover demoted it, or the URL names
  // a standby. The next connection looks for the primary again.
  '25006',
  // nestjs-durable's NoPrimaryError: none of a multi-host URL's hosts is a primary yet (mid-failover)
  'NO_PRIMARY',
  // a statement of the engine issued before a failover was noticed (store/guarded-client.ts): retried
  'PRIMARY_CHANGED',
  // Prisma: can't reach, timed out reaching, server closed the connection
  'P1001',
  'P1002',
  'P1017',
]);

const CONNECTION_MESSAGE =
  /Connection terminated|connection ended|Client has encountered a connection error|timeout exceeded when trying to connect|Can't reach database server|server closed the connection|the database system is (?:shutting down|starting up|in recovery mode)|terminating connection due to administrator command|too many clients already|remaining connection slots are reserved|cannot execute \w+ in a read-only transaction|Code: `(?:08\w{3}|57P0[123]|53300|25006)`/i;

/**
 * SQLSTATEs a server sends when a connection must not be used again: the server is a standby now
 * (25006), is shutting down or restarting (57P01–57P03), or the connection failed (class 08). A
 * pooled connection that met one is closed instead of being handed to the next statement.
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
    const { code, meta, message } = e as { code?: unknown; meta?: { code?: unknown }; message?: unknown };
    for (const c of [code, meta?.code]) {
      if (typeof c === 'string' && (CONNECTION_CODES.has(c) || /^08[0-9A-Z]{3}$/.test(c))) return true;
    }
    if (typeof message === 'string' && CONNECTION_MESSAGE.test(message)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
