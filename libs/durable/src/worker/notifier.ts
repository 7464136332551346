import pg from 'pg';
import { CANCEL_CHANNEL, COMPENSATE_CHANNEL, FLOW_LIMITS_CHANNEL, SIGNAL_CHANNEL, WAKEUP_CHANNEL } from '../store/sql-fragments.js';
import type { DurableLogger } from '../config/options.js';
import { OutageLog } from '../retry/outage-log.js';

export interface NotifierHandlers {
  wake(queue: string): void;
  cancelled(runId: string): void;
  /** The run was asked to cancel with compensation. */
  cancelRequested?(runId: string): void;
  /** Something a RUNNING run may wait for arrived (a message, a finished child). */
  signal?(runId: string): void;
  /** A queue's cluster-wide limits changed (payload: the queue). */
  limitsChanged?(queue: string): void;
  /** After (re)connecting: hints may have been missed meanwhile. */
  reconnected(): void;
}

/**
 * One dedicated connection LISTENing for wake-up and cancel hints. Hints only make things
 * faster: if the connection drops, polling keeps everything correct while it reconnects
 * with back-off. While it is up, the lease heartbeat also runs on it (see session()).
 */
export class Notifier {
  private client: pg.Client | null = null;
  private stopped = false;
  private retryTimer?: NodeJS.Timeout;
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
    const client = new pg.Client(this.config);
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    client.on('notification', (msg) => {
      if (msg.channel === WAKEUP_CHANNEL && msg.payload) this.handlers.wake(msg.payload);
      else if (msg.channel === CANCEL_CHANNEL && msg.payload) this.handlers.cancelled(msg.payload);
      else if (msg.channel === SIGNAL_CHANNEL && msg.payload) this.handlers.signal?.(msg.payload);
      else if (msg.channel === COMPENSATE_CHANNEL && msg.payload) this.handlers.cancelRequested?.(msg.payload);
      else if (msg.channel === FLOW_LIMITS_CHANNEL && msg.payload) this.handlers.limitsChanged?.(msg.payload);
    });
    try {
      await client.connect();
      await client.query(
        `LISTEN ${WAKEUP_CHANNEL}; LISTEN ${CANCEL_CHANNEL}; LISTEN ${SIGNAL_CHANNEL}; LISTEN ${COMPENSATE_CHANNEL}; LISTEN ${FLOW_LIMITS_CHANNEL}`,
      );
      if (this.stopped) {
        await client.end().catch(() => {});
        return;
      }
      this.client = client;
      this.outage.ok();
      this.handlers.reconnected();
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
      this.lost(client, err);
    }
  }

  private lost(client: pg.Client, err: unknown): void {
    if (this.stopped || (this.client && this.client !== client)) return;
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
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => {});
  }
}
