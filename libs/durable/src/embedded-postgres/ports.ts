import { createServer } from 'node:net';

/** Tries to listen on 127.0.0.1:port (0: any); resolves with the port it got, or null if it is taken. */
function tryListen(port: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(null) : reject(err)));
    server.listen(port, '127.0.0.1', () => {
      const { port: got } = server.address() as { port: number };
      server.close(() => resolve(got));
    });
  });
}

/**
 * Where a server's port is looked for: below the ranges operating systems hand out to outgoing
 * connections (Linux 32768–60999, Windows and macOS 49152–65535). A port from those ranges (what
 * port 0 gives) can be taken by a client's socket between this check and the server's start, which
 * comes seconds later, after initdb.
 */
const SERVER_PORTS = { from: 15_000, to: 32_768 };

/** A port on 127.0.0.1 that is free right now, for a server to listen on soon (see SERVER_PORTS). */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const port = SERVER_PORTS.from + Math.floor(Math.random() * (SERVER_PORTS.to - SERVER_PORTS.from));
    if ((await tryListen(port)) !== null) return port;
  }
  return (await tryListen(0))!;
}

export async function isPortFree(port: number): Promise<boolean> {
  return (await tryListen(port)) !== null;
}
