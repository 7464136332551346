import { Durable, Step } from 'nestjs-durable';
import type { DurableEngine } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { clientEngine } from '../support/client-engine.js';
import { EngineHarness, eventually, sleep, STEADY } from '../support/engine-harness.js';
import { WorkerProcess } from '../support/processes.js';

/** @Step({ transactional: true }): the step's writes and its checkpoint commit together, exactly once. */
describe('transactional steps', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('txstep');
  });
  afterAll(() => h.close());
  const ledger = (runId: string) => h.query<{ pid: number }>(`SELECT pid FROM test_ledger WHERE run_id = $1`, [runId]);

  describe('in one process', () => {
    class Payments {
      failuresLeft = 0;
      @Step({ transactional: true, retries: { maxAttempts: 3, initialDelayMs: 10 } })
      async book(runId: string) {
        await Durable.tx<PrismaClient>().$executeRaw`INSERT INTO test_ledger (run_id, step, pid) VALUES (${runId}, 'book', ${process.pid})`;
        if (this.failuresLeft-- > 0) throw new Error('failed after writing');
        return 'booked';
      }
      @Step({ transactional: true, retries: 0, transaction: { timeout: 200 } })
      async tooSlow(runId: string) {
        await Durable.tx<PrismaClient>().$executeRaw`INSERT INTO test_ledger (run_id, step) VALUES (${runId}, 'slow')`;
        await sleep(600);
        return 'never';
      }
    }
    const payments = new Payments();
    let engine: DurableEngine;
    beforeAll(async () => {
      // A lease that outlasts a loaded machine's stalls: a lease lost mid-run replays the step from its first attempt.
      engine = await h.engine(
        {
          book: async () => payments.book(Durable.runId()),
          slow: async () => payments.tooSlow(Durable.runId()),
        },
        STEADY,
      );
    });

    it('a retry after the step threw after writing leaves exactly one ledger row', async () => {
      payments.failuresLeft = 2;
      const handle = await engine.startRun('book', null);
      expect(await handle.result({ timeoutMs: 10_000 })).toBe('booked');
      expect(await ledger(handle.id)).toHaveLength(1);
      expect((await engine.getRun(handle.id))?.steps[0]).toMatchObject({ name: 'book', status: 'SUCCEEDED', attempts: 3 });
    });

    it('a Prisma transaction timeout (P2028) becomes a step error saying which option to raise', async () => {
      const handle = await engine.startRun('slow', null);
      await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow(
        /Transactional step "tooSlow" exceeded its Prisma transaction limits.*Raise @Step\(\{ transactional: true, transaction: \{ timeout, maxWait \} \}\)/s,
      );
      expect(await ledger(handle.id)).toEqual([]);
      const run = await engine.getRun(handle.id);
      expect(run?.steps[0]).toMatchObject({
        status: 'FAILED',
        error: { name: 'StepTransactionTimeoutError', code: 'STEP_TRANSACTION_TIMEOUT' },
      });
    });
  });

  describe('across processes', () => {
    let client: DurableEngine;
    const workers: WorkerProcess[] = [];
    const spawnWorker = async () => {
      const w = await WorkerProcess.start(h.db.url);
      workers.push(w);
      return w;
    };
    /** The plain step s0 is checkpointed: the transactional ledger step (slow in `slowPid`) is under way. */
    const inLedgerStep = async (runId: string) => {
      await eventually(
        async () => (await h.query(`SELECT 1 FROM durable_steps WHERE run_id = $1 AND seq = 0`, [runId])).length > 0,
        15_000,
        's0 checkpoint',
      );
      // s1 wrote its ledger row: its transaction (open, uncommitted) holds the table's write lock
      await eventually(
        async () =>
          (
            await h.query(
              `SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                WHERE l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                  AND c.relname = 'test_ledger' AND l.mode = 'RowExclusiveLock' AND l.pid <> pg_backend_pid()`,
            )
          ).length > 0,
        15_000,
        "s1's ledger row",
      );
    };
    beforeAll(async () => {
      client = await clientEngine(h.db.url, h.prisma as never);
    });
    afterEach(async () => {
      await Promise.all(workers.splice(0).map((w) => w.stop()));
    });
    afterAll(() => client.stop());

    it('SIGKILL during the transactional step: one ledger row, written by the process that finished', async () => {
      const a = await spawnWorker();
      const handle = await client.startRun('counted', { steps: 1, ledger: true, slowStep: 1, slowMs: 60_000, slowPid: a.pid });
      await inLedgerStep(handle.id);
      a.kill('SIGKILL');
      await a.exit();
      const b = await spawnWorker();
      expect(await client.handle(handle.id).result({ timeoutMs: 30_000 })).toMatchObject({ pids: [a.pid, b.pid] });
      expect(await ledger(handle.id)).toEqual([{ pid: b.pid }]);
    });

    it('a zombie resuming after its lease was taken over cannot commit its ledger row', async () => {
      const a = await spawnWorker();
      const handle = await client.startRun('counted', { steps: 1, ledger: true, slowStep: 1, slowMs: 3_000, slowPid: a.pid });
      await inLedgerStep(handle.id);
      a.kill('SIGSTOP'); // frozen with its transaction open and its ledger row written but not committed
      const b = await spawnWorker();
      expect(await client.handle(handle.id).result({ timeoutMs: 30_000 })).toMatchObject({ pids: [a.pid, b.pid] });
      a.kill('SIGCONT'); // its step ends, its checkpoint matches nothing, its transaction rolls back
      await sleep(3_000);
      expect(await ledger(handle.id)).toEqual([{ pid: b.pid }]);
      expect(await h.query(`SELECT count(*)::int AS n FROM durable_steps WHERE run_id = $1`, [handle.id])).toEqual([{ n: 2 }]);
      expect(a.child.exitCode).toBeNull();
    });
  });
});
