import pg from 'pg';
import { checkListening, LISTEN_CHANNELS } from '../store/listen-check.js';
import type { DurableLogger } from '../config/options.js';
import { OutageLog } from '../retry/outage-log.js';

export interface NotifierHandlers {
  wake(queue: string): void;
  cancelled(runId: string): void;
  /** The run was asked to cancel with compensation. */
  cancelRequested?(runId: string): void;
  /** Something a RUNNING run may wait for arrived (a message, a finished child). */
  signal?(runId: string): void;
  /** A chunk was written to one of the run's streams (payload: the run id). */
  streamed?(runId: string): void;
  /** A queue's cluster-wide limits changed (payload: the queue). */
  limitsChanged?(queue: string): void;
  /** After (re)connecting: hints may have been missed meanwhile. */
  reconnected(): void;
  /**
   * A connection found a new primary (a failover, with a multi-host URL): the executions in flight
   * may rely on writes the new primary lost (asynchronous replication) and must start over from it.
   */
  primaryChanged?(): void;
}

/** How often the LISTEN session checks that it still listens, on the primary. */
const LISTEN_CHECK_MS = 10_000;

/**
 * One dedicated connection LISTENing for wake-up and cancel hints. Hints only make things
 * faster: if the connection drops, polling keeps everything correct while it reconnects
 * with back-off. While it is up, the lease heartbeat also runs on it (see session()).
 *
 * A connection can stay open and yet hear nothing: its server became a standby (a failover
 * demoted it; NOTIFY is never sent there), or a pooler lost its LISTENs. Every LISTEN_CHECK_MS
 * the session asks its server whether it is the primary and listens on every channel; if not, or
 * if the check fails or hangs, the session is replaced (on the primary, for a multi-host URL).
 */
export class Notifier {
  private client: pg.Client | null = null;
  private stopped = false;
  private retryTimer?: NodeJS.Timeout;
  private checkTimer?: NodeJS.Timeout;
  private readonly outage: OutageLog;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly handlers: NotifierHandlers,
    logger: DurableLogger,
  ) {
    this.outage = new OutageLog('wake-up listener (LISTEN)', logger);
  }

  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    const Client: typeof pg.Client = ((this.config as pg.PoolConfig).Client as typeof pg.Client | undefined) ?? pg.Client;
    const client = new Client(this.config);
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    client.on('notification', (msg) => {
      if (!msg.payload) return;
      if (msg.channel === LISTEN_CHANNELS.wakeup) this.handlers.wake(msg.payload);
      else if (msg.channel === LISTEN_CHANNELS.cancel) this.handlers.cancelled(msg.payload);
      else if (msg.channel === LISTEN_CHANNELS.signal) this.handlers.signal?.(msg.payload);
      else if (msg.channel === LISTEN_CHANNELS.compensate) this.handlers.cancelRequested?.(msg.payload);
      else if (msg.channel === LISTEN_CHANNELS.flowLimits) this.handlers.limitsChanged?.(msg.payload);
      else if (msg.channel === LISTEN_CHANNELS.stream) this.handlers.streamed?.(msg.payload);
    });
    try {
      await client.connect();
      await client.query(
        Object.values(LISTEN_CHANNELS)
          .map((c) => `LISTEN ${c}`)
          .join('; '),
      );
      if (this.stopped) {
        await client.end().catch(() => {});
        return;
      }
      this.client = client;
      this.outage.ok();
      this.scheduleCheck(client);
      this.handlers.reconnected();
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      this.lost(client, err);
    }
  }

  /** The periodic check of a session (see the class comment); a session that fails it is ended and replaced. */
  private scheduleCheck(client: pg.Client): void {
    clearTimeout(this.checkTimer);
    this.checkTimer = setTimeout(async () => {
      if (this.client !== client) return;
      const hung = setTimeout(
        () => this.drop(client, new Error(`the LISTEN session did not answer its check within ${LISTEN_CHECK_MS} ms`)),
        LISTEN_CHECK_MS,
      );
      hung.unref?.();
      try {
        const problem = await checkListening(client);
        if (problem) this.drop(client, new Error(problem));
        else this.scheduleCheck(client);
      } catch (err) {
        this.drop(client, err);
      } finally {
        clearTimeout(hung);
      }
    }, LISTEN_CHECK_MS);
    this.checkTimer.unref?.();
  }

  /** Ends a session that no longer hears notifications; lost() then reconnects. */
  private drop(client: pg.Client, reason: unknown): void {
    if (this.client !== client) return;
    this.lost(client, reason);
    void client.end().catch(() => {});
  }

  private lost(client: pg.Client, err: unknown): void {
    if (this.stopped || (this.client && this.client !== client)) return;
    clearTimeout(this.checkTimer);
    this.client = null;
    this.outage.failed(err);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.connect(), this.outage.backoffMs());
    this.retryTimer.unref?.();
  }

  /**
   * The LISTEN connection while it is up, else null. It is idle between notifications, so the
   * lease heartbeat uses it: renewing leases then never waits behind a busy pool nor needs a
   * new connection from a server that is full.
   */
  session(): pg.Client | null {
    return this.client;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.checkTimer);
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => {});
  }
}
