// A process with the Prisma client docs/databases.md recommends on MariaDB (adapter-mariadb with an
// initSql statement), whose connections a proxy drops while that statement runs and cuts every
// half second: its bundle (test/support/processes.ts) with DATABASE_URL set to a
// mysql:// URL. It prints how many queries succeeded and how many connections were dropped, and
// exits 0; an unhandled rejection from the driver would end it with code 1.
import { createServer, connect, type Socket } from 'node:net';
import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { PrismaClient } from '../generated/mysql-prisma/client.js';

const target = new URL(process.env.DATABASE_URL!);
const sockets = new Set<Socket>();
let dropped = 0;
const proxy = createServer((client) => {
  const upstream = connect(Number(target.port || 3306), target.hostname);
  for (const s of [client, upstream]) {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {
      client.destroy();
      upstream.destroy();
    });
  }
  // Every other connection is reset as its initSql statement goes out.
  client.on('data', (chunk: Buffer) => {
    if (chunk.includes('idle_transaction_timeout') && dropped++ % 2 === 0) {
      client.resetAndDestroy();
      upstream.destroy();
    }
  });
  client.pipe(upstream);
  upstream.pipe(client);
});
await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));

const prisma = new PrismaClient({
  adapter: new PrismaMariaDb({
    host: '127.0.0.1',
    port: (proxy.address() as { port: number }).port,
    user: decodeURIComponent(target.username),
    password: decodeURIComponent(target.password) || undefined,
    database: target.pathname.slice(1),
    connectionLimit: 4,
    acquireTimeout: 1_000,
    initSql: ['SET SESSION idle_transaction_timeout = 30'],
  }),
});
let succeeded = 0;
const until = Date.now() + 3_000;
const cut = setInterval(() => {
  for (const s of sockets) s.destroy();
}, 500);
await Promise.all(
  Array.from({ length: 4 }, async () => {
    while (Date.now() < until) {
      await prisma.$queryRawUnsafe('SELECT 1').then(
        () => succeeded++,
        () => new Promise((r) => setTimeout(r, 20)),
      );
    }
  }),
);
clearInterval(cut);
console.log(`succeeded ${succeeded}, dropped during initSql ${Math.ceil(dropped / 2)}`);
await prisma.$disconnect();
proxy.close();
