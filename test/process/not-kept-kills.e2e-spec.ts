import type { DurableEngine } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { clientEngine } from '../support/client-engine.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually, sleep } from '../support/engine-harness.js';
import { WorkerProcess } from '../support/processes.js';
import { prismaFor } from '../support/prisma.js';

/**
 * Runs that are not kept (@Workflow({ deleteOnSuccess })) across worker processes that are
 * SIGKILLed and frozen while they work: each run's transactional ledger step commits exactly once,
 * every run is deleted in the end, and nothing of a run is left behind (no steps, history or
 * messages of a deleted run). A frozen worker that wakes after its runs were taken over ends or
 * deletes nothing: its end is fenced like any other. Real Nest worker processes (test/support/worker-app.ts).
 */
const RUNS = 60;

describe('runs that are not kept, under SIGKILL and SIGSTOP', () => {
  let db: TestDatabase;
  let prisma: PrismaClient;
  let client: DurableEngine;
  const workers: WorkerProcess[] = [];
  const q = async <T = any>(sql: string, params: unknown[] = []) => (await prisma.$queryRawUnsafe(sql, ...params)) as T[];
  const spawnWorker = async () => {
    const w = await WorkerProcess.start(db.url, { DURABLE_CONCURRENCY: '8' });
    workers.push(w);
    return w;
  };
  const count = async (sql: string) => (await q<{ n: number }>(sql))[0].n;

  beforeAll(async () => {
    db = await createTestDatabase('not_kept_kills');
    prisma = prismaFor(db.url);
    client = await clientEngine(db.url, prisma, ['countedJob']);
  });
  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await client.stop();
    await prisma.$disconnect();
    await db.drop();
  });

  it(`${RUNS} runs through a SIGKILL and a frozen worker: one ledger row each, all deleted, nothing left behind`, async () => {
    const [a, b] = await Promise.all([spawnWorker(), spawnWorker()]);
    // Two plain steps then the transactional ledger step; the second step is slow enough that the kills land mid-run.
    await client.startMany(
      Array.from({ length: RUNS }, (_, i) => ({
        workflow: 'countedJob',
        input: { steps: 2, ledger: true, slowStep: 1, slowMs: 300 },
        options: { id: `job-${String(i).padStart(3, '0')}` },
      })),
    );
    const holding = async (w: WorkerProcess) => count(`SELECT count(*)::int AS n FROM durable_runs WHERE lease_owner LIKE '%:${w.pid}:%'`);
    await eventually(async () => (await holding(a)) > 0 && (await holding(b)) > 0, 30_000, 'both workers holding runs');
    a.kill('SIGKILL');
    await a.exit();
    b.kill('SIGSTOP'); // frozen past its lease: c takes its runs over
    const frozen = await q<{ id: string }>(`SELECT id FROM durable_runs WHERE lease_owner LIKE '%:${b.pid}:%'`);
    expect(frozen.length).toBeGreaterThan(0);
    // A third worker starts (however long a loaded machine takes) and takes over runs of both; b wakes only after that.
    const c = await spawnWorker();
    const tookOverFrozen = async () =>
      frozen.length > 0 &&
      (await count(
        `SELECT count(DISTINCT run_id)::int AS n FROM test_step_executions WHERE pid = ${c.pid} AND run_id IN (${frozen.map((r) => `'${r.id}'`).join(', ')})`,
      )) > 0;
    await eventually(tookOverFrozen, 60_000, "the new worker taking over the frozen worker's runs");
    b.kill('SIGCONT');
    await eventually(async () => (await count(`SELECT count(*)::int AS n FROM durable_runs`)) === 0, 60_000, 'every run deleted');
    await sleep(1_000); // anything the woken worker still had in flight has landed (or was refused)

    const ledger = await q<{ run_id: string; n: number }>(`SELECT run_id, count(*)::int AS n FROM test_ledger GROUP BY run_id`);
    expect(ledger).toHaveLength(RUNS);
    expect(ledger.filter((r) => r.n !== 1)).toEqual([]);
    // The kills landed on runs in flight: some runs executed steps in more than one process.
    const taken = await count(
      `SELECT count(*)::int AS n FROM (SELECT run_id FROM test_step_executions GROUP BY run_id HAVING count(DISTINCT pid) > 1) t`,
    );
    expect(taken).toBeGreaterThan(0);
    // The runs the frozen worker held went on in another process while it slept.
    const tookOver = await count(
      `SELECT count(DISTINCT run_id)::int AS n FROM test_step_executions WHERE pid = ${c.pid} AND run_id IN (${frozen.map((r) => `'${r.id}'`).join(', ')})`,
    );
    expect(frozen.length).toBeGreaterThan(0);
    expect(tookOver).toBeGreaterThan(0);
    for (const table of ['durable_steps', 'durable_run_events', 'durable_messages', 'durable_events', 'durable_stream_chunks'])
      expect({ table, n: await count(`SELECT count(*)::int AS n FROM ${table}`) }).toEqual({ table, n: 0 });
    expect(b.child.exitCode).toBeNull();
    expect(c.child.exitCode).toBeNull();
  });
});
