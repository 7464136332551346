import pg from 'pg';
import { meansServerGone } from './connection-errors.js';
import { aimAt, isStandby, type PrimaryFinder } from './primary-finder.js';
import { formatHost } from './postgres-hosts.js';

type Callback = ((err: Error) => void) | ((err: null, c: pg.Client) => void);

/**
 * The pg Client class of every pool and session the library makes (and of createPostgresPool()):
 *
 * - It always listens to 'error'. node-postgres emits it on a client whose connection dies (a
 *   restart, a failover), and a pool stops listening while a client is checked out: an emitted
 *   'error' with no listener kills the process. The error still reaches the statement that was
 *   running, or the next one.
 * - A connection whose server said it is going away or is a standby now (SQLSTATE 25006, 57P01–3,
 *   class 08) ends itself, so the pool drops it on release instead of handing it to the next
 *   statement.
 * - With a finder (a URL with several hosts), it connects to the primary: the host the finder
 *   knows, checked after connecting; a host that turns out to be a standby is forgotten, and the
 *   connection fails with a retryable error.
 */
export function guardedClientClass(
  finder: PrimaryFinder | null,
  opts: {
    /**
     * Statements issued before a failover was noticed fail (retryably) instead of running on the
     * new primary: they come from code that may rely on writes the new primary lost (asynchronous
     * replication). The engine's pools set it, and stop their executions at the failover.
     */
    failAcrossFailover?: boolean;
  } = {},
): typeof pg.Client {
  return class GuardedClient extends pg.Client {
    /** The finder, when this class's clients look for the primary among several hosts (poolFor() then makes a PrimaryPool). */
    static readonly finder = finder;
    static readonly failAcrossFailover = opts.failAcrossFailover === true;
    private retiring = false;

    constructor(config?: string | pg.ClientConfig) {
      super(config);
      this.on('error', () => {}); // the statement in flight (or the next one) reports it
      (this.connection as unknown as NodeJS.EventEmitter).on('errorMessage', (msg: { code?: string }) => {
        if (meansServerGone(msg.code)) this.retire();
      });
    }

    /** Ends the connection once the statement that met the error has its answer. */
    private retire(): void {
      if (this.retiring) return;
      this.retiring = true;
      setImmediate(() => void this.end().catch(() => {}));
    }

    override connect(): Promise<pg.Client>;
    override connect(callback: Callback): void;
    override connect(callback?: Callback): Promise<pg.Client> | void {
      if (!finder) return callback ? super.connect(callback) : super.connect();
      const connected = this.connectToPrimary(finder);
      if (!callback) return connected;
      connected.then(
        (c) => (callback as (err: null, c: pg.Client) => void)(null, c),
        (err: Error) => (callback as (err: Error) => void)(err),
      );
    }

    /**
     * Connects to the primary. A host the finder remembered that refuses or turns out to be a
     * standby (a failover happened since) is forgotten, and the error is marked `staleHost`:
     * PrimaryPool tries once more, with a new search, so the statement waiting for this connection
     * does not fail merely because the pool learnt of the failover through it.
     */
    private async connectToPrimary(f: PrimaryFinder): Promise<pg.Client> {
      const { host, known } = await f.primary();
      aimAt(this, host);
      let standby: boolean;
      try {
        await super.connect();
        standby = await isStandby(this);
      } catch (err) {
        f.forget(host);
        throw known ? Object.assign(err as Error, { staleHost: true }) : err;
      }
      if (standby) {
        f.forget(host);
        await this.end().catch(() => {});
        throw Object.assign(new Error(`${formatHost(host)} is a standby now (it was the primary): the next connection looks again`), {
          code: '25006',
          staleHost: known,
        });
      }
      return this;
    }
  };
}

/** What PrimaryPool reads of its Client class (guardedClientClass). */
interface PrimaryClientClass {
  finder?: PrimaryFinder | null;
  failAcrossFailover?: boolean;
}

/**
 * A pg Pool for clients that look for the primary. Its connect() tries once more when a new
 * connection failed only because the primary it knew is gone (the second try searches the hosts
 * again), so a statement does not fail merely because the pool learnt of the failover through it.
 * With failAcrossFailover, a statement issued before a failover was noticed and served after it
 * fails with a retryable PRIMARY_CHANGED error instead.
 */
export class PrimaryPool extends pg.Pool {
  override connect(): Promise<pg.PoolClient>;
  override connect(callback: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void): void;
  override connect(
    callback?: (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void,
  ): Promise<pg.PoolClient> | void {
    const cls = this.options.Client as PrimaryClientClass | undefined;
    const before = cls?.finder?.failovers ?? 0;
    const connected = super
      .connect()
      .catch((err: { staleHost?: boolean }) => (err?.staleHost ? super.connect() : Promise.reject(err)))
      .then((client) => {
        if (!cls?.failAcrossFailover || (cls.finder?.failovers ?? 0) === before) return client;
        client.release();
        throw Object.assign(
          new Error('the database failed over while this statement waited for a connection: it was not sent (retry it)'),
          {
            code: 'PRIMARY_CHANGED',
          },
        );
      });
    if (!callback) return connected;
    connected.then(
      (client) => callback(undefined, client, (release) => client.release(release as Error | boolean | undefined)),
      (err: Error) => callback(err, undefined, () => {}),
    );
  }
}

/** A pool for `config`: a PrimaryPool when its clients look for the primary, else a plain pg Pool (nothing added on the path of a single host). */
export function poolFor(config: pg.PoolConfig): pg.Pool {
  return (config.Client as PrimaryClientClass | undefined)?.finder ? new PrimaryPool(config) : new pg.Pool(config);
}
