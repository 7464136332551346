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

/** A port on 127.0.0.1 that is free right now. */
export async function freePort(): Promise<number> {
  return (await tryListen(0))!;
}

export async function isPortFree(port: number): Promise<boolean> {
  return (await tryListen(port)) !== null;
}
