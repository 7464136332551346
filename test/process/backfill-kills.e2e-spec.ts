import type { DurableEngine } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { clientEngine } from '../support/client-engine.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually, sleep } from '../support/engine-harness.js';
import { WorkerProcess } from '../support/processes.js';
import { prismaFor } from '../support/prisma.js';

/**
 * A backfill of 100,000 rows across worker processes SIGKILLed one after another, and a run's
 * tenant context after its worker was killed mid-step: every row's ledger entry is written exactly
 * once (each batch's writes and its cursor commit together), and the process that takes a run over
 * restores its context. Real Nest worker processes (test/support/worker-app.ts).
 */
const ROWS = 100_000;

describe('backfills and the run context under SIGKILL', () => {
  let db: TestDatabase;
  let prisma: PrismaClient;
  let client: DurableEngine;
  const workers: WorkerProcess[] = [];
  const q = async <T = any>(sql: string, params: unknown[] = []) => (await prisma.$queryRawUnsafe(sql, ...params)) as T[];
  const spawnWorker = async () => {
    const w = await WorkerProcess.start(db.url);
    workers.push(w);
    return w;
  };

  beforeAll(async () => {
    db = await createTestDatabase('backfill_kills');
    prisma = prismaFor(db.url);
    client = await clientEngine(db.url, prisma, ['backfillLedger', 'tenantEcho']);
    await q(`CREATE TABLE test_backfill_items (id int PRIMARY KEY)`);
    await q(`CREATE TABLE test_backfill_ledger (item_id int NOT NULL, pid int NOT NULL)`);
    await q(`INSERT INTO test_backfill_items SELECT generate_series(1, ${ROWS})`);
  });
  afterAll(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await client.stop();
    await prisma.$disconnect();
    await db.drop();
  });

  it(`a ${ROWS.toLocaleString('en')}-row backfill through repeated SIGKILLs: every row exactly once`, async () => {
    await Promise.all([spawnWorker(), spawnWorker()]);
    // Throttled so that the kills land while it works (about 8 s of work without them).
    const handle = await client.startRun('backfillLedger', { rowsPerSecond: 12_500 }, { id: 'ledger-backfill', queue: 'backfills' });
    let kills = 0;
    // Each kill waits until the holder has written rows since the last one: on a loaded machine a
    // fresh holder can take longer than the check interval to commit its first batch.
    const written = async () => (await q<{ n: number }>(`SELECT count(*)::int AS n FROM test_backfill_ledger`))[0].n;
    let writtenAtLastKill = 0;
    const status = async () => (await q<{ status: string }>(`SELECT status FROM durable_runs WHERE id = 'ledger-backfill'`))[0]?.status;
    while ((await status()) !== 'SUCCEEDED' && kills < 3) {
      await sleep(1_500);
      const holder = (await q<{ lease_owner: string | null }>(`SELECT lease_owner FROM durable_runs WHERE id = 'ledger-backfill'`))[0]
        ?.lease_owner;
      // Kill the process that holds the backfill (its lease names its pid), and start a fresh one.
      const victim = workers.find((w) => holder?.includes(`:${w.pid}:`));
      if (!victim || (await status()) === 'SUCCEEDED' || (await written()) <= writtenAtLastKill) continue;
      victim.kill('SIGKILL');
      writtenAtLastKill = await written();
      workers.splice(workers.indexOf(victim), 1);
      kills++;
      void spawnWorker();
    }
    await eventually(async () => (await status()) === 'SUCCEEDED', 120_000, 'the backfill to finish');
    console.log(`backfill of ${ROWS} rows: ${kills} SIGKILLs of the process holding it; ledger checked below`);
    expect(kills).toBeGreaterThanOrEqual(3);
    const [ledger] = await q<{ n: number; distinct_items: number; pids: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT item_id)::int AS distinct_items, count(DISTINCT pid)::int AS pids FROM test_backfill_ledger`,
    );
    expect(ledger).toEqual({ n: ROWS, distinct_items: ROWS, pids: expect.any(Number) });
    expect(ledger.pids).toBeGreaterThanOrEqual(2);
    const result = (await handle.result({ timeoutMs: 5_000 })) as { rows: number; after: number };
    expect(result).toMatchObject({ rows: ROWS, after: ROWS, dryRun: false });
    const progress = (await client.backfills()).find((b) => b.runId === 'ledger-backfill');
    expect(progress).toMatchObject({ status: 'SUCCEEDED', done: ROWS, paused: false });
  }, 240_000);

  it('a run whose worker was killed mid-step is restored with its tenant context by the process that takes it over', async () => {
    while (workers.length < 2) await spawnWorker();
    const handle = await client.startRun('tenantEcho', { slowMs: 60_000 }, { context: { tenantId: 'acme' } });
    await eventually(
      async () => (await q(`SELECT 1 FROM test_step_executions WHERE run_id = $1 AND step LIKE 'first:%'`, [handle.id])).length > 0,
      30_000,
      'the first step to begin',
    );
    const [{ pid }] = await q<{ pid: number }>(`SELECT pid FROM test_step_executions WHERE run_id = $1`, [handle.id]);
    const victim = workers.find((w) => w.pid === pid)!;
    victim.kill('SIGKILL');
    workers.splice(workers.indexOf(victim), 1);
    // Another worker takes it over once the lease expires, and replays it from its checkpoints.
    const output = (await handle.result({ timeoutMs: 60_000 })) as { first: string; second: string; finishedBy: number };
    expect(output).toEqual({ first: 'acme/acme', second: 'acme/acme', finishedBy: expect.any(Number) });
    expect(output.finishedBy).not.toBe(pid);
    const steps = await q<{ step: string; pid: number }>(`SELECT step, pid FROM test_step_executions WHERE run_id = $1 ORDER BY at`, [
      handle.id,
    ]);
    expect(steps.map((x) => x.step)).toEqual(['first:acme/acme', 'first:acme/acme', 'second:acme/acme']);
    expect(steps[0].pid).toBe(pid);
    expect(steps[1].pid).toBe(output.finishedBy);
  }, 120_000);
});
