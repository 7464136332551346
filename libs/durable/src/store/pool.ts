import { errorText } from '../errors/error-text.js';
// Named type imports only: this file's declarations are public, and @types/pg has no default export
// under every module setting an app may use.
import type { Client, ClientConfig, Pool, PoolConfig } from 'pg';
import type { DurableLogger } from '../config/options.js';
import { guardedClientClass, poolFor } from './guarded-client.js';
import { formatHost, parsePostgresUrl } from './postgres-hosts.js';
import { PrimaryFinder } from './primary-finder.js';

/** pg settings with the Client class that makes every connection (see guarded-client.ts). */
export type GuardedPoolConfig = PoolConfig & { Client: typeof Client };

/**
 * TCP keepalive probes start after this much silence (the system default is 2 hours); how soon a
 * connection to a vanished server then fails is the system's probe interval × count.
 */
const KEEPALIVE_DELAY_MS = 10_000;

/**
 * pg settings from a Postgres URL. Prisma's `?schema=name` parameter (which pg ignores) becomes
 * the connection's search_path, so the engine finds the tables where Prisma created them. A URL
 * with several hosts (`postgresql://u@db1,db2/app`) connects to whichever is the primary, and finds
 * it again after a failover.
 */
export function pgConfigFromUrl(
  url: string,
  logger?: Pick<DurableLogger, 'log'>,
  /** Called when a connection finds a new primary (a failover); statements issued before it then fail (see PrimaryPool). */
  onPrimaryChange?: () => void,
): GuardedPoolConfig {
  const target = parsePostgresUrl(url);
  const parsed = new URL(target.url);
  const schema = parsed.searchParams.get('schema');
  parsed.searchParams.delete('schema');
  const config: ClientConfig = {
    connectionString: parsed.toString(),
    application_name: 'nestjs-durable',
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
  };
  if (schema) config.options = `-c search_path="${schema.replace(/"/g, '""')}"`;
  const finder = target.primaryOnly
    ? new PrimaryFinder(target.hosts, config, (host, movedFrom) => {
        logger?.log(
          movedFrom
            ? `the primary is now ${formatHost(host)} (was ${formatHost(movedFrom)})`
            : `connected to the primary ${formatHost(host)}`,
        );
        if (movedFrom) onPrimaryChange?.();
      })
    : null;
  return { ...config, Client: guardedClientClass(finder, { failAcrossFailover: onPrimaryChange !== undefined }) };
}

/** The engine's own small pool (claims, heartbeats, checkpoints): short statements only. */
export function createPool(config: GuardedPoolConfig, max: number, logger: DurableLogger): Pool {
  const pool = poolFor({ ...config, max, connectionTimeoutMillis: 10_000, idleTimeoutMillis: 30_000 });
  logIdleErrors(pool, logger);
  return pool;
}

/**
 * An idle connection dying (e.g. Postgres restart) must not crash the app; the next query
 * reconnects. A restart drops every idle connection at once: one line per outage, not one per connection.
 */
function logIdleErrors(pool: Pool, logger: Pick<DurableLogger, 'warn'>): void {
  let loggedAt = -Infinity;
  let unlogged = 0;
  pool.on('error', (err) => {
    if (Date.now() - loggedAt < 30_000) {
      unlogged++;
      return;
    }
    logger.warn(
      `idle database connection lost: ${errorText(err)}${unlogged ? ` (${unlogged} more since the last report)` : ''}; the next statement reconnects`,
    );
    loggedAt = Date.now();
    unlogged = 0;
  });
}

/** Options of postgresPoolConfig() and createPostgresPool(): any pg Pool setting, and where their few log lines go. */
export interface PostgresPoolOptions extends Omit<PoolConfig, 'connectionString' | 'Client'> {
  /** Where "the primary is now …" and lost-connection lines go (default: console). */
  logger?: Pick<DurableLogger, 'log' | 'warn'>;
}

/**
 * pg Pool settings for the app's Prisma adapter (`new PrismaPg(postgresPoolConfig(url))`) that
 * survive what a database does in production:
 *
 * - a URL with several hosts (`postgresql://u@db1:5432,db2:5432/app`) connects to the primary, and
 *   after a failover finds the new one (node-postgres alone takes one host);
 * - a connection to a server that restarted, went away or became a standby is dropped, not reused;
 * - no connection error, idle or in a transaction, can crash the process.
 *
 * The settings carry their own `Client` class, so they work whichever copy of `pg` the adapter loads.
 */
export function postgresPoolConfig(url: string, options: PostgresPoolOptions = {}): PoolConfig {
  const { logger = console, ...poolOptions } = options;
  // The app's own application_name (or pg's default), not the engine's.
  return {
    connectionTimeoutMillis: 10_000,
    ...poolOptions,
    ...pgConfigFromUrl(url, logger),
    application_name: poolOptions.application_name,
  };
}

/** A pg Pool made from postgresPoolConfig(), for code that wants the pool itself (`connection: pool`, `new PrismaPg(pool)`). */
export function createPostgresPool(url: string, options: PostgresPoolOptions = {}): Pool {
  const pool = poolFor(postgresPoolConfig(url, options));
  logIdleErrors(pool, options.logger ?? console);
  return pool;
}
