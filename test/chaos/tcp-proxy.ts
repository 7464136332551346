import { createServer, connect, type Server, type Socket } from 'node:net';
import { Transform } from 'node:stream';

/**
 * A TCP proxy in front of a database server that can simulate an outage for the processes that
 * connect through it — every connection dropped, new ones refused — or one connection lost at a
 * chosen statement, without touching the server other tests share. (A real restart additionally answers "the database system is shutting down"
 * / "terminating connection due to administrator command"; the chaos script does that one.)
 */
/** A one-shot cut of TcpProxy.cutOnce: `fired` once a connection was dropped for it. */
export interface Cut {
  fired: boolean;
}

export class TcpProxy {
  private server: Server;
  private readonly sockets = new Set<Socket>();
  /** Each connection's two directions: [from, to] as piped (the proxy's filters between). */
  private readonly pipes = new Set<Array<[NodeJS.ReadableStream, NodeJS.WritableStream]>>();
  /** One-shot cuts: the connection that next sends `marker` is dropped, before or after the server answers. */
  private readonly cuts: Array<{ marker: string; when: 'before-server' | 'before-reply'; cut: Cut }> = [];
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
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    let dropOnReply = false;
    const toServer = new Transform({
      transform: (chunk: Buffer, _enc, done) => {
        const cut = this.cuts.findIndex((c) => chunk.includes(c.marker));
        if (cut < 0) return done(null, chunk);
        const [{ when, cut: made }] = this.cuts.splice(cut, 1);
        made.fired = true;
        if (when === 'before-server') return drop();
        dropOnReply = true;
        done(null, chunk);
      },
    });
    const toClient = new Transform({ transform: (chunk: Buffer, _enc, done) => (dropOnReply ? drop() : done(null, chunk)) });
    const pipes: Array<[NodeJS.ReadableStream, NodeJS.WritableStream]> = [
      [client, toServer],
      [upstream, toClient],
    ];
    this.pipes.add(pipes);
    client.on('close', () => this.pipes.delete(pipes));
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      s.on('error', drop);
    }
    for (const [from, to] of pipes) from.pipe(to);
    toServer.pipe(upstream);
    toClient.pipe(client);
  }

  /**
   * Drops the connection that next sends `marker` (a run's id, say: statements go as prepared ones,
   * so their text is not always sent, their parameters are): 'before-server' drops it unsent (the
   * statement never runs), 'before-reply' once the server answers (a statement outside a transaction
   * has committed by then; the client never hears so). The cut says whether it was made.
   */
  cutOnce(marker: string, when: 'before-server' | 'before-reply'): Cut {
    const cut = { fired: false };
    this.cuts.push({ marker, when, cut });
    return cut;
  }

  /** Forgets the cuts not made yet. */
  clearCuts(): void {
    this.cuts.length = 0;
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
    for (const pipes of this.pipes)
      for (const [from, to] of pipes) {
        from.unpipe(to);
        from.pause();
      }
    await new Promise((r) => setTimeout(r, ms));
    this.stalled = null;
    for (const pipes of this.pipes) for (const [from, to] of pipes) from.pipe(to);
    end();
  }

  async close(): Promise<void> {
    this.down = true;
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
