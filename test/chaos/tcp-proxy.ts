import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of Postgres that can simulate a database outage for the processes that
 * connect through it — every connection dropped, new ones refused — without touching the server
 * other tests share. (A real restart additionally answers "the database system is shutting down"
 * / "terminating connection due to administrator command"; the chaos script does that one.)
 */
export class TcpProxy {
  private server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly pairs = new Set<[Socket, Socket]>();
  private down = false;
  /** While set, nothing is forwarded and new connections wait: a network partition. */
  private stalled: Promise<void> | null = null;

  private constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
    readonly port: number,
    server: Server,
  ) {
    this.server = server;
  }

  /** Listens on 127.0.0.1 (a free port) and forwards to the host:port of `databaseUrl`. */
  static async start(databaseUrl: string): Promise<TcpProxy> {
    const u = new URL(databaseUrl);
    const host = u.hostname || '127.0.0.1';
    const port = Number(u.port || 5432);
    const holder: { proxy?: TcpProxy } = {};
    const server = createServer((client) => holder.proxy!.accept(client));
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
    holder.proxy = new TcpProxy(host, port, (server.address() as { port: number }).port, server);
    return holder.proxy;
  }

  /** `databaseUrl` with its host and port replaced by the proxy's. */
  url(databaseUrl: string): string {
    const u = new URL(databaseUrl);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  private accept(client: Socket): void {
    if (this.down) {
      client.destroy();
      return;
    }
    if (this.stalled) {
      client.pause();
      void this.stalled.then(() => this.accept(client));
      return;
    }
    const upstream = connect(this.targetPort, this.targetHost);
    const pair: [Socket, Socket] = [client, upstream];
    this.pairs.add(pair);
    client.on('close', () => this.pairs.delete(pair));
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Drops every connection and refuses new ones for `ms` (the listener closes, so connects get ECONNREFUSED). */
  async outage(ms: number): Promise<void> {
    this.down = true;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await new Promise((r) => setTimeout(r, ms));
    const server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(this.port, '127.0.0.1', resolve));
    this.server = server;
    this.down = false;
  }

  /**
   * A network partition for `ms`: connections stay open but nothing gets through (statements
   * hang, new connections wait); afterwards everything flows again, late.
   */
  async stall(ms: number): Promise<void> {
    let end!: () => void;
    this.stalled = new Promise<void>((r) => (end = r));
    for (const [a, b] of this.pairs) {
      a.unpipe(b);
      b.unpipe(a);
      a.pause();
      b.pause();
    }
    await new Promise((r) => setTimeout(r, ms));
    this.stalled = null;
    for (const [a, b] of this.pairs) {
      a.pipe(b);
      b.pipe(a);
    }
    end();
  }

  async close(): Promise<void> {
    this.down = true;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
