import type pg from 'pg';
import type { DurableLogger } from '../config/options.js';
import type { WorkerNode } from '../store/distribution.js';
import { Notifier, type NotifierHandlers } from './notifier.js';

/** How often the list of worker nodes is read again (nodes added to the cluster, or removed). */
const REFRESH_MS = 30_000;

/**
 * Distributed mode: a statement that names one partition runs on the worker node that holds it,
 * and its pg_notify fires there, not on the coordinator this engine's LISTEN session is on. So
 * each engine also listens on every worker node, one session each, kept as the main session is
 * (reconnected with back-off), the list of nodes read again every REFRESH_MS. Hints only make
 * things faster: polling keeps everything correct while a node's session is down.
 */
export class NodeListeners {
  private readonly sessions = new Map<string, Notifier>();
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private failedOnce = false;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly handlers: NotifierHandlers,
    private readonly logger: DurableLogger,
    private readonly nodes: () => Promise<WorkerNode[]>,
  ) {}

  async start(): Promise<void> {
    this.stopped = false;
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await Promise.all([...this.sessions.values()].map((s) => s.stop()));
    this.sessions.clear();
  }

  /** Never throws: a failure is logged once until a refresh succeeds again. */
  private async refresh(): Promise<void> {
    try {
      await this.follow(await this.nodes());
      this.failedOnce = false;
    } catch (err) {
      if (!this.failedOnce)
        this.logger.warn(`could not listen on the cluster's worker nodes (wake-ups from them wait for polling): ${(err as Error).message}`);
      this.failedOnce = true;
    }
  }

  /** Sessions on exactly these nodes: new ones started (not awaited: a node that does not answer holds nothing up), gone ones stopped. */
  private async follow(nodes: WorkerNode[]): Promise<void> {
    const wanted = new Map(nodes.map((n) => [`${n.host}:${n.port}`, n]));
    for (const [key, session] of this.sessions) {
      if (wanted.has(key)) continue;
      this.sessions.delete(key);
      await session.stop();
    }
    for (const [key, node] of wanted) {
      if (this.stopped || this.sessions.has(key)) continue;
      const session = new Notifier(nodeConfig(this.config, node), this.handlers, this.logger);
      this.sessions.set(key, session);
      void session.start();
    }
  }
}

/** The engine's connection settings, pointed at a worker node (same user, password and database). */
function nodeConfig(config: pg.ClientConfig, node: WorkerNode): pg.ClientConfig {
  // A node that does not answer is given up on (and tried again with back-off) rather than waited for.
  const out: pg.ClientConfig & { Client?: unknown } = {
    ...config,
    host: node.host,
    port: node.port,
    Client: undefined,
    connectionTimeoutMillis: 5_000,
  };
  if (config.connectionString) {
    const url = new URL(config.connectionString);
    url.hostname = node.host.includes(':') ? `[${node.host}]` : node.host;
    url.port = String(node.port);
    out.connectionString = url.toString();
  }
  return out;
}
