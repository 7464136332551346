import type { DurableEngine } from 'nestjs-durable';
import { WorkflowFailedError } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { clientEngine } from '../support/client-engine.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { WorkerProcess } from '../support/processes.js';
import { prismaFor } from '../support/prisma.js';

/**
 * Durable waits across real worker processes (test/waits/waits-worker.ts: a DurableEngine with
 * inMemoryWaitMaxMs 1 s), killed with SIGKILL at the worst moments.
 */
describe('waits: real worker processes killed mid-wait', () => {
  let db: TestDatabase;
  let prisma: PrismaClient;
  let client: DurableEngine;
  const workers: WorkerProcess[] = [];
  const q = async <T = any>(sql: string, params: unknown[] = []) => (await prisma.$queryRawUnsafe(sql, ...params)) as T[];
  const spawn = async () => {
    const w = await WorkerProcess.start(db.url, {}, 'test/waits/waits-worker.ts');
    workers.push(w);
    return w;
  };
  const killAll = async () => {
    const live = workers.splice(0);
    for (const w of live) w.kill('SIGKILL');
    await Promise.all(live.map((w) => w.exit()));
  };
  /** Executions per step of a run (and of runs whose id starts with it: its children). */
  const executions = (runId: string) =>
    q<{ step: string; n: number }>(
      `SELECT step, count(*)::int AS n FROM test_step_executions WHERE run_id = $1 OR run_id LIKE $2 GROUP BY step ORDER BY step`,
      [runId, `${runId}:%`],
    );
  const status = async (id: string) => (await q<{ status: string }>(`SELECT status FROM durable_runs WHERE id = $1`, [id]))[0]?.status;

  beforeAll(async () => {
    db = await createTestDatabase('waitproc');
    prisma = prismaFor(db.url);
    client = await clientEngine(db.url, prisma, ['sleeper', 'parallel', 'fanout', 'leaf', 'slow']);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });
  afterAll(async () => {
    await client.stop();
    await prisma.$disconnect();
    await db.drop();
  });

  it('a 2 s sleep survives SIGKILL of every worker: the run completes once, after the wake time, no step twice', async () => {
    await Promise.all([spawn(), spawn()]);
    const handle = await client.startRun('sleeper', { sleepMs: 2_000 });
    await eventually(async () => (await status(handle.id)) === 'WAITING', 10_000, 'the run to suspend');
    const waiting = (await client.getRun(handle.id))!;
    const wake = waiting.steps.find((s) => s.name === 'durable.sleep')!.output as Date;
    expect(waiting.leaseOwner).toBeNull(); // holds no worker: nothing to lose when they die
    await killAll();
    const c = await spawn();
    const out = (await client.handle(handle.id).result({ timeoutMs: 20_000 })) as { wokeAt: Date; pid: number };
    expect(out.wokeAt.getTime()).toBeGreaterThanOrEqual(wake.getTime());
    expect(out.pid).toBe(c.pid);
    expect(await executions(handle.id)).toEqual([
      { step: 's0', n: 1 },
      { step: 's1', n: 1 },
    ]);
    const kinds = (await client.getRunEvents(handle.id)).map((e) => e.kind);
    expect(kinds.filter((k) => k === 'completed')).toHaveLength(1);
    expect(kinds).toEqual(['created', 'claimed', 'suspended', 'woken', 'completed']);
  });

  it('parallel steps replay correctly after a crash between their completions', async () => {
    const a = await spawn();
    // p0 and p1 finish at once, p2 and p3 are still running when the process dies.
    const handle = await client.startRun('parallel', { ms: [0, 50, 30_000, 30_000], slowPid: a.pid });
    await eventually(
      async () => (await q(`SELECT seq FROM durable_steps WHERE run_id = $1`, [handle.id])).length === 2,
      10_000,
      'two checkpoints',
    );
    await killAll();
    const b = await spawn();
    const out = await client.handle(handle.id).result({ timeoutMs: 20_000 });
    expect(out).toEqual({ steps: ['p0', 'p1', 'p2', 'p3'], after: 'after' });
    const steps = (await client.getRun(handle.id))!.steps;
    expect(steps.map((s) => [s.seq, s.name, (s.output as { step: string }).step, (s.output as { pid: number }).pid])).toEqual([
      [0, 'count', 'p0', a.pid],
      [1, 'count', 'p1', a.pid],
      [2, 'count', 'p2', b.pid],
      [3, 'count', 'p3', b.pid],
      [4, 'count', 'after', b.pid],
    ]);
    expect(await executions(handle.id)).toEqual([
      { step: 'after', n: 1 },
      { step: 'p0', n: 1 },
      { step: 'p1', n: 1 },
      { step: 'p2', n: 2 },
      { step: 'p3', n: 2 },
    ]);
  });

  it("fan-out of 20 children + fan-in survives SIGKILL of the parent's process mid-way", async () => {
    await Promise.all([spawn(), spawn()]);
    const handle = await client.startRun('fanout', { n: 20, ms: 400 });
    await eventually(
      async () => {
        const [{ n }] = await q<{ n: number }>(
          `SELECT count(*)::int AS n FROM durable_runs WHERE parent_id = $1 AND status = 'SUCCEEDED'`,
          [handle.id],
        );
        return n >= 3 && n < 20;
      },
      15_000,
      'some children done',
    );
    await killAll();
    await spawn();
    const out = (await client.handle(handle.id).result({ timeoutMs: 30_000 })) as { sum: number; ids: string[] };
    expect(out.sum).toBe(Array.from({ length: 20 }, (_, i) => i * i).reduce((x, y) => x + y, 0));
    const children = await q<{ id: string; status: string }>(`SELECT id, status FROM durable_runs WHERE parent_id = $1 ORDER BY id`, [
      handle.id,
    ]);
    expect(children).toHaveLength(20);
    expect(children.every((c) => c.status === 'SUCCEEDED')).toBe(true);
    const ex = await executions(handle.id);
    expect(ex.find((e) => e.step === 'before')?.n).toBe(1);
    expect(ex.find((e) => e.step === 'after')?.n).toBe(1);
    expect(ex.filter((e) => e.step.startsWith('leaf'))).toHaveLength(20);
    // A leaf runs again only if it was in flight at the kill (at-least-once); none runs 3 times.
    expect(ex.every((e) => e.n <= 2)).toBe(true);
  });

  it('a deadline is enforced for a run whose process was SIGKILLed', async () => {
    await spawn();
    const handle = await client.startRun('slow', { ms: 60_000 }, { timeoutMs: 1_500 });
    await eventually(async () => (await executions(handle.id)).length === 1, 10_000, 'the slow step to start');
    await killAll();
    await spawn(); // its sweeper enforces the deadline of a run nobody executes
    const err = (await client
      .handle(handle.id)
      .result({ timeoutMs: 15_000 })
      .catch((e) => e)) as WorkflowFailedError;
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(err.runError).toMatchObject({ code: 'DEADLINE_EXCEEDED' });
    expect(await status(handle.id)).toBe('FAILED');
  });
});
