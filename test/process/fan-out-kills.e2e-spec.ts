import type { DurableEngine } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { clientEngine } from '../support/client-engine.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { WorkerProcess } from '../support/processes.js';
import { prismaFor } from '../support/prisma.js';

/**
 * A group of children (Durable.startChildren) whose parent's worker is SIGKILLed while it writes
 * the group's chunks, and a second worker killed while the children run: the next execution goes
 * on from the last chunk written, every child exists once and commits its transactional ledger
 * step exactly once, and the group's counter ends at its size. Real Nest worker processes
 * (test/support/worker-app.ts).
 */
const CHILDREN = 1_500;

describe('a fan-out under SIGKILL', () => {
  let db: TestDatabase;
  let prisma: PrismaClient;
  let client: DurableEngine;
  const workers: WorkerProcess[] = [];
  const q = async <T = any>(sql: string, params: unknown[] = []) => (await prisma.$queryRawUnsafe(sql, ...params)) as T[];
  const spawnWorker = async () => {
    // A 5-s lease: computing a chunk's inputs blocks the event loop for about a second.
    const w = await WorkerProcess.start(db.url, { DURABLE_CONCURRENCY: '20', DURABLE_LEASE_MS: '5000', DURABLE_HEARTBEAT_MS: '1000' });
    workers.push(w);
    return w;
  };
  const created = async () => (await q<{ created: number }>(`SELECT created FROM durable_child_groups`))[0]?.created ?? 0;

  beforeAll(async () => {
    db = await createTestDatabase('fan_out_kills');
    prisma = prismaFor(db.url);
    client = await clientEngine(db.url, prisma, ['fanOutLedger']);
  });
  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await client.stop();
    await prisma.$disconnect();
    await db.drop();
  });

  it(`${CHILDREN} children through a SIGKILL mid-creation and one mid-run: each child once, each ledger row once`, async () => {
    const a = await spawnWorker();
    // 1 ms of work per input: a chunk of 1,000 takes about a second to compute, so the kill lands between chunks.
    const handle = await client.startRun('fanOutLedger', { children: CHILDREN, inputMs: 1 }, { id: 'fan' });
    await eventually(async () => (await created()) >= 1_000, 60_000, 'the first chunk written');
    a.kill('SIGKILL');
    await a.exit();
    const partial = await created();
    expect(partial).toBeLessThan(CHILDREN); // killed while it was still writing chunks

    const b = await spawnWorker();
    await eventually(async () => (await created()) === CHILDREN, 120_000, 'the rest of the chunks written by another worker');
    await eventually(
      async () => Number((await q<{ n: number }>(`SELECT count(*)::int AS n FROM test_ledger`))[0].n) > CHILDREN / 4,
      120_000,
      'children running',
    );
    b.kill('SIGKILL');
    await b.exit();
    await spawnWorker();

    const out = (await handle.result({ timeoutMs: 240_000 })) as { progress: Record<string, number>; succeeded: number };
    expect(out.progress).toEqual({ total: CHILDREN, ended: CHILDREN, succeeded: CHILDREN, failed: 0, cancelled: 0 });
    expect(out.succeeded).toBe(CHILDREN);
    // Every child exists once, in order, and its transactional step committed exactly once.
    const [kids] = await q<{ n: number; lo: number; hi: number }>(
      `SELECT count(*)::int AS n, min(group_index) AS lo, max(group_index) AS hi FROM durable_runs WHERE parent_id = 'fan'`,
    );
    expect(kids).toEqual({ n: CHILDREN, lo: 0, hi: CHILDREN - 1 });
    const ledger = await q<{ runs: number; rows: number }>(
      `SELECT count(DISTINCT run_id)::int AS runs, count(*)::int AS rows FROM test_ledger`,
    );
    expect(ledger).toEqual([{ runs: CHILDREN, rows: CHILDREN }]);
    const [g] = await q<Record<string, number>>(`SELECT total, created, ended, succeeded, failed, cancelled FROM durable_child_groups`);
    expect(g).toEqual({ total: CHILDREN, created: CHILDREN, ended: CHILDREN, succeeded: CHILDREN, failed: 0, cancelled: 0 });
  }, 300_000); // the waits above bound each phase; this bounds the whole on a loaded machine
});
