import { Durable, DurableEngine, Step, WorkflowRegistry } from 'nestjs-durable';
import pg from 'pg';
import { EngineHarness, FAST, eventually, sleep } from '../support/engine-harness.js';

describe('leases', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('leases');
  });
  afterAll(() => h.close());

  it('are renewed on the LISTEN session while every connection of the engine pool is taken', async () => {
    // The engine's pool has one connection; the test takes it for longer than the lease while
    // a step works. Renewal must not wait for it (nor need a new connection from a full server).
    // The lease is 3 s: long enough that a busy machine (the chaos suite beside this one) does not
    // stall a heartbeat past it; renewals while the pool is taken are what is checked.
    const pool = new pg.Pool({ connectionString: h.db.url, max: 1 });
    pool.on('error', () => {});
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const stepEntered = new Promise<void>((r) => (entered = r));
    let executions = 0;
    class Steps {
      @Step() async work() {
        executions++;
        entered();
        await released;
        return 'done';
      }
    }
    const steps = new Steps();
    const registry = new WorkflowRegistry();
    registry.register({ name: 'long', queue: 'default', options: {}, run: async () => steps.work() });
    const leaseMs = 3_000;
    const engine = new DurableEngine({ registry, connection: pool, options: { ...FAST, leaseMs, heartbeatMs: 200 } });
    await engine.start();
    try {
      const handle = await engine.startRun('long', null);
      await stepEntered;
      const taken = await pool.connect();
      const [{ at: takenAt }] = await h.query(`SELECT now() AS at`);
      await sleep(leaseMs + 1_000); // past the lease it had when the pool was taken
      const [row] = await h.query(
        `SELECT status, lease_expires_at > now() AS alive, lease_expires_at > $2::timestamptz + $3 * interval '1 millisecond' AS renewed, lease_epoch
         FROM durable_runs WHERE id = $1`,
        [handle.id, takenAt, leaseMs],
      );
      taken.release();
      release();
      // renewed: a heartbeat went out after the pool's only connection was taken
      expect(row).toEqual({ status: 'RUNNING', alive: true, renewed: true, lease_epoch: 1 });
      await expect(handle.result({ timeoutMs: 10_000 })).resolves.toBe('done');
      expect(executions).toBe(1);
      expect(
        await h.query(`SELECT kind FROM durable_run_events WHERE run_id = $1 AND kind IN ('lease_lost', 'lease_expired')`, [handle.id]),
      ).toEqual([]);
    } finally {
      release();
      await engine.stop();
      await pool.end();
    }
  });

  it('a heartbeat that races a run ending or suspending does not report the lease lost', async () => {
    // Heartbeats every 20 ms against 200 short runs that end or sleep (suspend): a heartbeat that
    // no longer finds a run RUNNING because its end or suspension just committed is not a loss.
    // The lease is long (10 s) so that only that race could report a loss, not a heartbeat a busy
    // machine delayed past the lease (which is a loss).
    class Steps {
      @Step() async quick(i: number) {
        return i;
      }
    }
    const steps = new Steps();
    const engine = await h.engine(
      {
        quick: async (i: number) => steps.quick(i),
        nap: async (i: number) => {
          await steps.quick(i);
          await Durable.sleep(50);
          return steps.quick(i + 1);
        },
      },
      { heartbeatMs: 20, leaseMs: 10_000, inMemoryWaitMaxMs: 0, concurrency: 20 },
    );
    await engine.startMany(Array.from({ length: 200 }, (_, i) => ({ workflow: i % 2 ? 'quick' : 'nap', input: i })));
    await eventually(
      async () =>
        (await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE status = 'SUCCEEDED' AND workflow_name IN ('quick', 'nap')`))[0]
          .n === 200,
      30_000,
      '200 runs to succeed',
    );
    expect(await h.query(`SELECT run_id, detail FROM durable_run_events WHERE kind = 'lease_lost' LIMIT 5`)).toEqual([]);
  });
});
