import { errorText } from '../errors/error-text.js';
import pg from 'pg';
import type { DurableLogger } from '../config/options.js';

/**
 * pg settings from a Postgres URL. Prisma's `?schema=name` parameter (which pg ignores) becomes
 * the connection's search_path, so the engine finds the tables where Prisma created them.
 */
export function pgConfigFromUrl(url: string): pg.ClientConfig {
  const parsed = new URL(url);
  const schema = parsed.searchParams.get('schema');
  parsed.searchParams.delete('schema');
  const config: pg.ClientConfig = { connectionString: parsed.toString(), application_name: 'nestjs-durable', keepAlive: true };
  if (schema) config.options = `-c search_path="${schema.replace(/"/g, '""')}"`;
  return config;
}

/** The engine's own small pool (claims, heartbeats, checkpoints): short statements only. */
export function createPool(config: pg.ClientConfig, max: number, logger: DurableLogger): pg.Pool {
  const pool = new pg.Pool({ ...config, max, connectionTimeoutMillis: 10_000, idleTimeoutMillis: 30_000 });
  // An idle connection dying (e.g. Postgres restart) must not crash the app; the next query reconnects.
  // A restart drops every idle connection at once: one line per outage, not one per connection.
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
  return pool;
}
