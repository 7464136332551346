import { DurableEngine, WorkflowRegistry, type StreamChunk } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { WorkerProcess } from '../support/processes.js';
import { prismaFor } from '../support/prisma.js';
import { WORKER_CALLBACK_SECRET } from '../support/worker-secrets.js';

/**
 * Streams and callbacks across processes and SIGKILLs (real Nest worker processes,
 * test/support/worker-app.ts): a reader in this process sees every chunk of a stream once and in
 * order while the writing workers are killed one after another; a callback URL made by a worker
 * that is killed before anyone POSTs it still resumes the run, on another worker.
 */
describe('streams and callbacks under SIGKILL, across processes', () => {
  let db: TestDatabase;
  let prisma: PrismaClient;
  let client: DurableEngine;
  const workers: WorkerProcess[] = [];
  const alive = (w: WorkerProcess) => w.child.exitCode === null && w.child.signalCode === null;
  const spawnWorker = async () => {
    const w = await WorkerProcess.start(db.url);
    workers.push(w);
    return w;
  };

  beforeAll(async () => {
    db = await createTestDatabase('talk_kills');
    prisma = prismaFor(db.url);
    await prisma.$executeRawUnsafe('CREATE TABLE test_callbacks (run_id text PRIMARY KEY, token text NOT NULL, pid int NOT NULL)');
    const registry = new WorkflowRegistry();
    for (const name of ['streamTicker', 'callbackAfterKill'])
      registry.register({ name, queue: 'default', options: {}, run: async () => undefined });
    client = new DurableEngine({
      registry,
      connection: db.url,
      prisma: prisma as never,
      options: { worker: false, callbacks: { secret: WORKER_CALLBACK_SECRET } },
    });
    await client.start();
  });
  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await client.stop();
    await prisma.$disconnect();
    await db.drop();
  });

  it('a reader in another process gets every chunk once, in order, while writers are SIGKILLed', async () => {
    await Promise.all([spawnWorker(), spawnWorker()]);
    const n = 40;
    const handle = await client.startRun('streamTicker', { n, everyMs: 100 });
    const got: Array<StreamChunk<{ i: number; pid: number }>> = [];
    const reading = (async () => {
      for await (const c of handle.stream<{ i: number; pid: number }>('ticks', { pollMs: 50 })) got.push(c);
    })();
    const writers = new Set<number>();
    for (let kills = 0; kills < 2; kills++) {
      const seen = got.length;
      await eventually(async () => got.length >= seen + 8, 30_000, 'more chunks');
      const writer = workers.find((w) => w.pid === got[got.length - 1].value.pid && alive(w));
      if (!writer) continue;
      writers.add(writer.pid);
      writer.kill('SIGKILL');
      await spawnWorker();
    }
    await reading;
    expect(await handle.status()).toBe('SUCCEEDED');
    expect(got.map((c) => c.position)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(got.map((c) => c.value.i)).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(new Set(got.map((c) => c.value.pid)).size).toBeGreaterThan(1); // written by more than one process
    const [row] = await prisma.$queryRawUnsafe<Array<{ n: bigint }>>(
      `SELECT count(*) AS n FROM durable_stream_chunks WHERE run_id = $1`,
      handle.id,
    );
    expect(Number(row.n)).toBe(n);
  });

  it('a callback URL outlives the worker that made it: POSTed after its SIGKILL, the run resumes on another', async () => {
    const first = await spawnWorker();
    const handle = await client.startRun('callbackAfterKill', null);
    const made = await eventually(
      async () =>
        (
          await prisma.$queryRawUnsafe<Array<{ token: string; pid: number }>>(
            `SELECT token, pid FROM test_callbacks WHERE run_id = $1`,
            handle.id,
          )
        )[0],
      30_000,
      'the callback URL handed out',
    );
    const maker = workers.find((w) => w.pid === made.pid)!;
    maker.kill('SIGKILL');
    for (const w of workers.filter((x) => x !== maker && alive(x))) w.kill('SIGKILL');
    const second = await spawnWorker();
    expect(await client.completeCallback(made.token, { paid: 4200 })).toEqual({ runId: handle.id, duplicate: false });
    const result = (await handle.result({ timeoutMs: 30_000 })) as { body: unknown; finishedBy: number };
    expect(result.body).toEqual({ paid: 4200 });
    expect(result.finishedBy).toBe(second.pid);
    expect(first.pid).not.toBe(second.pid);
  });
});
