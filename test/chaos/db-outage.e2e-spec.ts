import { Durable, DurableEngine, Step, WorkflowRegistry, type EngineOptions } from 'nestjs-durable';
import pg from 'pg';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { WorkerProcess } from '../support/processes.js';
import { prismaFor } from '../support/prisma.js';
import { chaosSettings, workerEnv } from './chaos-config.js';
import { TcpProxy } from './tcp-proxy.js';

/**
 * Database outages, simulated with a TCP proxy between the engine and Postgres (every
 * connection dropped, new ones refused), so the server the other test files use is not touched.
 */
describe('database outages', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let pool: pg.Pool;
  const engines: DurableEngine[] = [];
  const workers: WorkerProcess[] = [];
  const q = async <T = any>(sql: string, params: unknown[] = []) => (await pool.query(sql, params)).rows as T[];
  const OPTS: EngineOptions = { leaseMs: 6_000, heartbeatMs: 1_000, pollIntervalMs: 100, sweepIntervalMs: 300, shutdownGraceMs: 500 };

  /** An engine whose every connection goes through the proxy. */
  async function engine(workflows: Record<string, (input: any) => Promise<unknown>>, options: EngineOptions = {}, prisma?: PrismaClient) {
    const registry = new WorkflowRegistry();
    for (const [name, run] of Object.entries(workflows)) registry.register({ name, queue: 'default', options: {}, run });
    const e = new DurableEngine({ registry, connection: proxy.url(db.url), prisma: prisma as never, options: { ...OPTS, ...options } });
    engines.push(e);
    await e.start();
    return e;
  }

  beforeAll(async () => {
    db = await createTestDatabase('outage');
    proxy = await TcpProxy.start(db.url);
    pool = new pg.Pool({ connectionString: db.url, max: 3 });
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    for (const e of engines.splice(0)) await e.stop();
  });
  afterAll(async () => {
    await pool.end();
    await proxy.close();
    await db.drop();
  });

  it('a worker-only process outlives an outage (it exited with code 0 when its connections dropped) and works on', async () => {
    const w = await WorkerProcess.start(proxy.url(db.url), workerEnv(chaosSettings()), 'test/chaos/chaos-worker.ts');
    workers.push(w);
    await proxy.outage(1_500);
    await new Promise((r) => setTimeout(r, 500));
    expect(w.child.exitCode).toBeNull();
    expect(w.child.signalCode).toBeNull();
    const client = await engine({ chaos: async () => undefined }, { worker: false });
    await client.startMany(
      Array.from({ length: 5 }, (_, i) => ({
        workflow: 'chaos',
        input: { stepMs: [0, 0, 0, 0], sleepMs: 10 },
        options: { id: `alive-${i}` },
      })),
    );
    // Each chaos run also has a child (chaos.reply): count the 5 chaos runs, which end after it.
    const done = async () =>
      (await q(`SELECT count(*)::int AS n FROM durable_runs WHERE status = 'SUCCEEDED' AND workflow_name = 'chaos'`))[0].n;
    await eventually(async () => (await done()) === 5, 30_000, 'the runs to succeed');
    expect(w.output).toMatch(/claiming from queue "default" works again/);
  });

  it('a checkpoint that fails with a connection error is written again; the step does not run again', async () => {
    let calls = 0;
    class Steps {
      @Step() async charge() {
        calls++;
        if (calls === 1) void proxy.outage(1_500); // the database goes away right before the checkpoint
        return 'charged';
      }
    }
    const steps = new Steps();
    const e = await engine({ pay: async () => steps.charge() });
    const handle = await e.startRun('pay', null);
    await eventually(
      async () => (await q(`SELECT status FROM durable_runs WHERE id = $1`, [handle.id]))[0]?.status === 'SUCCEEDED',
      20_000,
      'the run to succeed',
    );
    expect(calls).toBe(1);
    expect(await q(`SELECT name, status, attempts, output FROM durable_steps WHERE run_id = $1`, [handle.id])).toEqual([
      { name: 'charge', status: 'SUCCEEDED', attempts: 1, output: 'charged' },
    ]);
  });

  it("a run's end that fails with a connection error is written again, by the same execution (no replay after the lease)", async () => {
    class Steps {
      @Step() async work() {
        return 1;
      }
    }
    const steps = new Steps();
    const e = await engine({
      finishDuringOutage: async () => {
        await steps.work();
        void proxy.outage(1_500); // the database goes away right before the run's end is written
        return 'done';
      },
    });
    const handle = await e.startRun('finishDuringOutage', null);
    await eventually(
      async () => (await q(`SELECT status FROM durable_runs WHERE id = $1`, [handle.id]))[0]?.status === 'SUCCEEDED',
      20_000,
      'the run to succeed',
    );
    // Not left RUNNING until its lease expired and replayed: the first execution wrote its end.
    expect(await q(`SELECT attempt, lease_epoch, output FROM durable_runs WHERE id = $1`, [handle.id])).toEqual([
      { attempt: 1, lease_epoch: 1, output: 'done' },
    ]);
  });

  it('a transactional step whose transaction cannot begin (database unreachable) waits for it, even with retries: 0', async () => {
    const prisma = prismaFor(proxy.url(db.url), 2);
    let calls = 0;
    class Steps {
      @Step({ transactional: true, retries: 0 })
      async book() {
        calls++;
        await Durable.tx<PrismaClient>().$executeRawUnsafe(`INSERT INTO test_ledger (run_id, step) VALUES ('tx-run', 'book')`);
        return 'booked';
      }
    }
    const steps = new Steps();
    try {
      const e = await engine(
        {
          book: async () => {
            void proxy.outage(1_500); // the database goes away right before the step's transaction begins
            return steps.book();
          },
        },
        {},
        prisma,
      );
      await e.startRun('book', null, { id: 'tx-run' });
      await eventually(
        async () => (await q(`SELECT status FROM durable_runs WHERE id = 'tx-run'`))[0]?.status === 'SUCCEEDED',
        20_000,
        'the run to succeed',
      );
      expect(calls).toBe(1);
      expect(await q(`SELECT step FROM test_ledger WHERE run_id = 'tx-run'`)).toEqual([{ step: 'book' }]);
      expect(await q(`SELECT name, status, attempts FROM durable_steps WHERE run_id = 'tx-run'`)).toEqual([
        { name: 'book', status: 'SUCCEEDED', attempts: 1 },
      ]);
    } finally {
      for (const e of engines.splice(0)) await e.stop();
      await prisma.$disconnect();
    }
  });

  it('a worker whose heartbeat hangs (network partition) stops its runs when its lease runs out', async () => {
    let started = 0;
    let abortedAt = 0;
    class Steps {
      @Step({ retries: 0 })
      async long() {
        started = Date.now();
        const signal = Durable.signal();
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 20_000);
          signal.addEventListener('abort', () => ((abortedAt = Date.now()), clearTimeout(t), resolve()), { once: true });
        });
        return 'done';
      }
    }
    const steps = new Steps();
    const e = await engine({ partitioned: async () => steps.long() }, { leaseMs: 1_500, heartbeatMs: 300 });
    await e.startRun('partitioned', null);
    await eventually(async () => started > 0, 10_000, 'the step to start');
    const stallAt = Date.now();
    await proxy.stall(8_000); // statements hang, nothing fails: only the clock says the lease is gone
    expect(abortedAt).toBeGreaterThan(0);
    // Within the lease (1.5 s) of the last heartbeat, not when the partition healed: expected after
    // about lease + heartbeat (1.8 s); the bound leaves a loaded machine's event loop 4 s more.
    expect(abortedAt - stallAt).toBeLessThan(6_000);
  });

  it('logs the loss of its idle connections once per outage, not once per connection', async () => {
    const warnings: string[] = [];
    const logger = { log() {}, error() {}, debug() {}, warn: (m: string) => warnings.push(m) };
    const e = await engine({}, { worker: false, logger });
    await Promise.all(Array.from({ length: 6 }, () => e.storeForTools.sql.query('SELECT pg_sleep(0.05)'))); // 6 pooled connections
    await proxy.outage(500);
    await new Promise((r) => setTimeout(r, 200));
    expect(warnings.filter((w) => w.includes('idle database connection lost'))).toHaveLength(1);
  });

  it('logs "writing checkpoints works again" after an outage that outlasted the lease (the failed write gave up)', async () => {
    const logs: string[] = [];
    const logger = { log: (m: string) => logs.push(m), error: (m: string) => logs.push(m), warn() {}, debug() {} };
    let calls = 0;
    class Steps {
      @Step() async slow() {
        calls++;
        if (calls === 1) void proxy.outage(2_500); // longer than the lease: the execution is stopped, its write abandoned
        return calls;
      }
    }
    const steps = new Steps();
    const e = await engine({ outlast: async () => steps.slow() }, { leaseMs: 1_500, heartbeatMs: 300, logger });
    const handle = await e.startRun('outlast', null);
    await eventually(
      async () => (await q(`SELECT status FROM durable_runs WHERE id = $1`, [handle.id]))[0]?.status === 'SUCCEEDED',
      20_000,
      'the run to succeed',
    );
    // The test reads the end straight from Postgres; the engine hears its commit through the proxy a moment later and only then logs.
    await eventually(async () => logs.some((m) => m.startsWith('writing checkpoints works again')), 5_000, 'the recovery to be logged');
    expect(logs.filter((m) => m.startsWith('writing checkpoints failed'))).toHaveLength(1);
    expect(logs.filter((m) => m.startsWith('writing checkpoints works again'))).toHaveLength(1);
  });
});
