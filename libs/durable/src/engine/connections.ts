import type { Client, Pool, PoolConfig } from 'pg';
import { InvalidOptionsError } from '../errors/index.js';
import type { ResolvedEngineOptions } from '../config/options.js';
import { isMysqlUrl } from '../store/dialect.js';
import { CANCEL_CHANNEL, COMPENSATE_CHANNEL, FLOW_LIMITS_CHANNEL, SIGNAL_CHANNEL, WAKEUP_CHANNEL } from '../store/sql-fragments.js';
import { lazyMysqlPool, mysqlPoolConfig, mysqlSqlClient, type ContentionCounts } from '../store/mysql-client.js';
import { createPool, pgConfigFromUrl } from '../store/pool.js';
import { pgSqlClient, prismaSqlClient } from '../store/sql-client.js';
import { createStore, singleServer, type Store } from '../store/store.js';
import { readWorkerNodes } from '../store/distribution.js';
import { NodeListeners } from '../worker/node-listeners.js';
import { Notifier, type NotifierHandlers } from '../worker/notifier.js';
import type { TransactionalPrisma } from '../workflow/execution-services.js';

/** The engine's database connections: its store, its own pool (if any) and the LISTEN session. */
export interface EngineConnections {
  store: Store;
  /** Set when the engine created the pool from a URL (it closes it at stop). */
  ownedPool: { end(): Promise<void> } | null;
  /** The engine's pool (its own, or the one it was given); null when statements go through Prisma. */
  pool: Pool | null;
  notifier: Notifier | null;
  /** Distributed mode: the LISTEN sessions on the worker nodes (started only when the database turns out to be distributed). */
  nodeListeners: NodeListeners | null;
  /** The store on the LISTEN session while it is up (the lease heartbeat uses it), else null. */
  leaseStore: (() => Store | null) | undefined;
  /** A store on connections of their own for the sweeper (MySQL-family workers), else null: the sweeper uses `store`. */
  sweepStore: Store | null;
  /** Without a LISTEN session: how wake-ups from other processes arrive instead (logged when the worker starts). */
  wakeupNote: { level: 'log' | 'warn'; text: string } | null;
}

/**
 * Connects the engine: a URL gets a pool of `poolSize` plus a LISTEN session; a pg Pool is used
 * as it is (with a LISTEN session of the same settings); without either, every statement goes
 * through Prisma and wake-ups fall back to polling.
 */
export function connect(
  cfg: { connection?: string | Pool; poolSize?: number; preparedStatements?: boolean; prisma: TransactionalPrisma | null },
  options: ResolvedEngineOptions,
  handlers: NotifierHandlers,
): EngineConnections {
  const prepared = cfg.preparedStatements !== false;
  const history = options.history;
  if (typeof cfg.connection === 'string' && isMysqlUrl(cfg.connection)) {
    // MySQL-family servers have no LISTEN: wake-ups across processes come from polling (in-process starts run at once).
    // As on PostgreSQL (below): a transaction idle for a lease belongs to a frozen process; its locks go with it.
    const mysqlPool = lazyMysqlPool(mysqlPoolConfig(cfg.connection, cfg.poolSize ?? 10, options.leaseMs));
    // Hints of this process's own statements reach its worker at once (see SqlClient.notify).
    const notice = (channel: string, payload: string) => deliverNotice(handlers, channel, payload);
    const contention = contentionLog(options.logger);
    const sql = mysqlSqlClient(mysqlPool.get, notice, contention);
    // A worker's heartbeats and sweeps get two connections of their own, as PostgreSQL's heartbeat has
    // the LISTEN session: when the pool's connections all wait for one row lock (starts of one
    // debounce key queue behind each other, one short transaction of several statements each), leases
    // are still renewed and expired ones still swept.
    const upkeepPool = options.worker ? lazyMysqlPool(mysqlPoolConfig(cfg.connection, 2, options.leaseMs)) : null;
    const upkeep = upkeepPool ? createStore(mysqlSqlClient(upkeepPool.get, notice, contention), { history }) : null;
    return {
      store: createStore(sql, { history }),
      ownedPool: {
        end: async () => {
          await Promise.all([mysqlPool.end(), upkeepPool?.end()]);
        },
      },
      pool: null,
      notifier: null,
      nodeListeners: null,
      leaseStore: upkeep ? () => upkeep : undefined,
      sweepStore: upkeep,
      wakeupNote: {
        level: 'log',
        text:
          'MariaDB/MySQL have no LISTEN/NOTIFY: runs this process starts or wakes are claimed at once; ' +
          'runs other processes start are claimed at the next poll (pollIntervalMs)',
      },
    };
  }
  let pool: Pool | null = null;
  let listenConfig: PoolConfig | null = null;
  if (typeof cfg.connection === 'string') {
    // A worker's executions start over at a failover; a client-only engine has none (its statements are not held back).
    const onFailover = options.worker && handlers.primaryChanged ? () => handlers.primaryChanged?.() : undefined;
    const config = pgConfigFromUrl(cfg.connection, options.logger, onFailover);
    listenConfig = config;
    // The engine's transactions last milliseconds; one idle longer than a lease belongs to a process
    // that froze or was cut off inside it, and its locks (a queue's limits row) must not outlive it.
    pool = createPool({ ...config, idle_in_transaction_session_timeout: options.leaseMs }, cfg.poolSize ?? 10, options.logger);
  } else if (cfg.connection) {
    pool = cfg.connection;
    // Its settings, Client class included: a pool from createPostgresPool() gives the LISTEN session its primary-finding.
    listenConfig = { ...(cfg.connection.options as PoolConfig) };
  }
  // Distributed mode: read from the database when the engine starts (see readPartitions), shared by its stores.
  const layout = singleServer();
  let store: Store;
  if (pool) store = createStore(pgSqlClient(pool, { prepared }), { history, layout });
  else if (cfg.prisma) {
    // MySQL-family statements send their hints through the client (PostgreSQL's use pg_notify, which no session listens to here).
    const notice = (channel: string, payload: string) => deliverNotice(handlers, channel, payload);
    store = createStore(prismaSqlClient(cfg.prisma, undefined, notice), { history, layout });
  } else throw new InvalidOptionsError('nestjs-durable needs a database: pass `connection` (a Postgres URL or pg Pool) or `prisma`.');
  const notifier = listenConfig && options.worker ? new Notifier(listenConfig, handlers, options.logger) : null;
  return {
    store,
    ownedPool: typeof cfg.connection === 'string' ? pool : null,
    pool,
    notifier,
    nodeListeners:
      listenConfig && notifier ? new NodeListeners(listenConfig, handlers, options.logger, () => readWorkerNodes(store.sql)) : null,
    leaseStore: notifier ? sessionStore(notifier, prepared, store) : undefined,
    sweepStore: null,
    wakeupNote: notifier ? null : { level: 'warn', text: 'no connection of its own: wake-ups fall back to polling every pollIntervalMs' },
  };
}

/** The store on the notifier's LISTEN session, rebuilt when the session is replaced. */
function sessionStore(notifier: Notifier, prepared: boolean, like: Store): () => Store | null {
  let cached: { session: Client; store: Store } | null = null;
  return () => {
    const session = notifier.session();
    if (!session) return null;
    if (cached?.session !== session) cached = { session, store: { ...like, sql: pgSqlClient(session, { prepared }) } };
    return cached.store;
  };
}

/** A hint a statement of this process sent (MySQL-family databases: see SqlClient.notify), to the handler of its channel. */
function deliverNotice(handlers: NotifierHandlers, channel: string, payload: string): void {
  if (channel === WAKEUP_CHANNEL) handlers.wake(payload);
  else if (channel === CANCEL_CHANNEL) handlers.cancelled(payload);
  else if (channel === COMPENSATE_CHANNEL) handlers.cancelRequested?.(payload);
  else if (channel === SIGNAL_CHANNEL) handlers.signal?.(payload);
  else if (channel === FLOW_LIMITS_CHANNEL) handlers.limitsChanged?.(payload);
}

/**
 * MariaDB rolled back one of the engine's transactions (a deadlock, a lock-wait timeout) and it is
 * tried again: logged at most once a minute, with the totals since the engine started.
 */
function contentionLog(logger: ResolvedEngineOptions['logger']): (counts: Readonly<ContentionCounts>, err: Error) => void {
  let last = 0;
  return (counts, err) => {
    if (Date.now() - last < 60_000) return;
    last = Date.now();
    logger.warn(
      `database contention: a transaction was rolled back by the server and is tried again (${err.message}); ` +
        `${counts.deadlocks} deadlock(s) and ${counts.lockWaitTimeouts} lock-wait timeout(s) so far`,
    );
  };
}
