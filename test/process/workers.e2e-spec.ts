import type { DurableEngine } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { clientEngine } from '../support/client-engine.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually, sleep } from '../support/engine-harness.js';
import { WorkerProcess } from '../support/processes.js';
import { prismaFor } from '../support/prisma.js';

/**
 * Real worker processes (Nest application contexts running test/support/worker-app.ts),
 * killed with real signals.
 */
describe('worker processes', () => {
  let db: TestDatabase;
  let prisma: PrismaClient;
  let client: DurableEngine;
  const workers: WorkerProcess[] = [];
  const q = async <T = any>(sql: string, params: unknown[] = []) => (await prisma.$queryRawUnsafe(sql, ...params)) as T[];
  const spawnWorker = async (env: Record<string, string> = {}) => {
    const w = await WorkerProcess.start(db.url, env);
    workers.push(w);
    return w;
  };
  const executions = (runId: string) =>
    q<{ step: string; n: number; pids: number[] }>(
      `SELECT step, count(*)::int AS n, array_agg(pid ORDER BY at) AS pids FROM test_step_executions WHERE run_id = $1 GROUP BY step ORDER BY step`,
      [runId],
    );

  beforeAll(async () => {
    db = await createTestDatabase('workers');
    prisma = prismaFor(db.url);
    client = await clientEngine(db.url, prisma);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await q(`TRUNCATE durable_runs, test_step_executions, test_ledger CASCADE`);
  });
  afterAll(async () => {
    await client.stop();
    await prisma.$disconnect();
    await db.drop();
  });

  it('3 processes share 500 runs: every step of every run executes exactly once', async () => {
    // Sharing, not recovery, is under test: a lease long enough that a worker slowed down by a busy
    // machine (the package test installs and compiles beside it) does not lose runs it still holds,
    // which would re-execute their steps, as at-least-once allows (the recovery tests below).
    const patient = { DURABLE_LEASE_MS: '15000', DURABLE_HEARTBEAT_MS: '1000' };
    await Promise.all([spawnWorker(patient), spawnWorker(patient), spawnWorker(patient)]);
    const started = Date.now();
    await client.startMany(
      Array.from({ length: 500 }, (_, i) => ({ workflow: 'counted', input: { steps: 3 }, options: { id: `run-${i}` } })),
    );
    await eventually(
      async () => (await q(`SELECT count(*)::int AS n FROM durable_runs WHERE status = 'SUCCEEDED'`))[0].n === 500,
      90_000,
      '500 runs to succeed',
    );
    const seconds = (Date.now() - started) / 1000;
    const dup = await q(`SELECT run_id, step, count(*)::int AS n FROM test_step_executions GROUP BY run_id, step HAVING count(*) <> 1`);
    expect(dup).toEqual([]);
    expect((await q(`SELECT count(*)::int AS n FROM test_step_executions`))[0].n).toBe(1500);
    expect((await q(`SELECT count(*)::int AS n FROM durable_steps`))[0].n).toBe(1500);
    const perPid = await q<{ pid: number; n: number }>(
      `SELECT pid, count(DISTINCT run_id)::int AS n FROM test_step_executions GROUP BY pid`,
    );
    expect(perPid.length).toBeGreaterThanOrEqual(2); // the work was shared
    console.log(
      `500 runs × 3 steps on 3 worker processes: ${seconds.toFixed(1)} s; runs per process: ${perPid.map((p) => p.n).join(', ')}`,
    );
  });

  it('SIGKILL mid-step: another process finishes the run; checkpointed steps do not run again', async () => {
    // A lease that outlasts a busy machine's stalls, for both workers: one that lost it would claim
    // the run again and run a step a second time (at-least-once), which is not what is under test.
    const patient = { DURABLE_LEASE_MS: '5000', DURABLE_HEARTBEAT_MS: '1000' };
    const a = await spawnWorker(patient);
    const handle = await client.startRun('counted', { steps: 3, slowStep: 1, slowMs: 60_000, slowPid: a.pid });
    await eventually(async () => (await executions(handle.id)).some((e) => e.step === 's1'), 15_000, 'step s1 to start');
    a.kill('SIGKILL');
    await a.exit();
    const b = await spawnWorker(patient);
    const out = (await client.handle(handle.id).result({ timeoutMs: 30_000 })) as { pids: number[]; finishedBy: number };
    expect(out.pids).toEqual([a.pid, b.pid, b.pid]);
    expect(out.finishedBy).toBe(b.pid);
    expect(await executions(handle.id)).toEqual([
      { step: 's0', n: 1, pids: [a.pid] },
      { step: 's1', n: 2, pids: [a.pid, b.pid] }, // in flight at the kill: at-least-once
      { step: 's2', n: 1, pids: [b.pid] },
    ]);
    expect(await client.getRun(handle.id)).toMatchObject({ status: 'SUCCEEDED', attempt: 2, leaseEpoch: 2 });
  });

  it('a frozen worker (SIGSTOP past its lease) cannot write after another took over (zombie fencing)', async () => {
    const a = await spawnWorker();
    const handle = await client.startRun('counted', { steps: 3, slowStep: 1, slowMs: 3_000, slowPid: a.pid, ledger: true });
    await eventually(async () => (await executions(handle.id)).some((e) => e.step === 's1'), 15_000, 'step s1 to start');
    a.kill('SIGSTOP');
    const b = await spawnWorker();
    const out = (await client.handle(handle.id).result({ timeoutMs: 30_000 })) as { pids: number[] };
    expect(out.pids).toEqual([a.pid, b.pid, b.pid, b.pid]);
    const before = await q(`SELECT status, output, updated_at, lease_epoch FROM durable_runs WHERE id = $1`, [handle.id]);
    const stepsBefore = await q(`SELECT seq, name, output FROM durable_steps WHERE run_id = $1 ORDER BY seq`, [handle.id]);
    a.kill('SIGCONT'); // its slow step "finishes" now and tries to checkpoint and go on
    await sleep(3_000);
    expect(await q(`SELECT status, output, updated_at, lease_epoch FROM durable_runs WHERE id = $1`, [handle.id])).toEqual(before);
    expect(await q(`SELECT seq, name, output FROM durable_steps WHERE run_id = $1 ORDER BY seq`, [handle.id])).toEqual(stepsBefore);
    const ex = await executions(handle.id);
    expect(ex.find((e) => e.step === 's2')).toEqual({ step: 's2', n: 1, pids: [b.pid] }); // the zombie never reached s2
    expect(await q(`SELECT pid FROM test_ledger WHERE run_id = $1`, [handle.id])).toEqual([{ pid: b.pid }]);
    expect(a.child.exitCode).toBeNull(); // the zombie noticed and carried on serving, without crashing
  });

  it('SIGTERM hands a long run over at once (graceful shutdown), not after the lease expires', async () => {
    const env = { DURABLE_LEASE_MS: '60000', DURABLE_HEARTBEAT_MS: '5000', DURABLE_GRACE_MS: '300' };
    const a = await spawnWorker(env);
    const handle = await client.startRun('counted', { steps: 2, slowStep: 0, slowMs: 30_000, slowPid: a.pid });
    await eventually(async () => (await executions(handle.id)).some((e) => e.step === 's0'), 15_000, 'step s0 to start');
    const b = await spawnWorker(env);
    const t0 = Date.now();
    await a.stop();
    const out = (await client.handle(handle.id).result({ timeoutMs: 20_000 })) as { pids: number[] };
    expect(Date.now() - t0).toBeLessThan(20_000); // the lease is 60 s
    expect(out.pids).toEqual([b.pid, b.pid]);
    expect(a.output).toMatch(/handed back/);
  });
});
