// Starts the same run ids as a sibling process, each in its own Prisma transaction, to race
// idempotent starts across processes. Env: DATABASE_URL, IDS (comma-separated).
import { clientEngine } from './client-engine.js';
import { prismaFor } from './prisma.js';

const url = process.env.DATABASE_URL!;
const prisma = prismaFor(url, 8);
const engine = await clientEngine(url, prisma);
process.stdout.write('ready\n');
await new Promise((r) => process.stdin.once('data', r)); // start signal: both processes go at once
process.stdin.destroy();
const ids = process.env.IDS!.split(',');
let errors = 0;
let next = 0;
// 8 transactions in flight per process (its pool size); both processes walk the ids in the same
// order, so nearly every id is contended.
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (next < ids.length) {
      const id = ids[next++];
      await prisma
        .$transaction(async (tx) => engine.startRun('counted', { from: process.pid }, { id, tx: tx as never }), { maxWait: 20_000 })
        .catch((err) => {
          errors++;
          process.stderr.write(`start ${id} failed: ${err.message}\n`);
        });
    }
  }),
);
process.stdout.write(`done errors=${errors}\n`);
await engine.stop();
await prisma.$disconnect();
