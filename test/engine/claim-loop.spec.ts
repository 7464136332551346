import { Durable } from 'nestjs-durable';
import { EngineHarness, eventually, sleep } from '../support/engine-harness.js';

/** The worker's slot counters of a queue (internal state: what these tests are about). */
const counts = (engine: unknown, queue = 'default') => {
  const q = (engine as any).runtime.worker.queues.get(queue);
  return { busy: q.busy, ending: q.ending, claiming: q.claiming };
};

/** The claim loop and its slots: small claims that ramp up, refused ends, and shutdown with ends in flight. */
describe('claim loop', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('claim_loop');
  });
  afterAll(() => h.close());

  it('1,000 runs inserted by another process are drained with no poll (claims ramp from 4)', async () => {
    let done = 0;
    const worker = await h.engine(
      { quick: async (n: number) => Durable.step('s', async () => (done++, n)) },
      { concurrency: 20, pollIntervalMs: 600_000, sweepIntervalMs: 600_000 },
    );
    await sleep(300); // the first poll found the queue empty: lastClaimed = 0
    const client = await h.engine({ quick: async (n: number) => n }, { worker: false });
    const began = Date.now();
    await client.startMany(Array.from({ length: 1000 }, (_, i) => ({ workflow: 'quick', input: i })));
    await eventually(async () => {
      const [r] = await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE status = 'SUCCEEDED'`);
      return r.n === 1000 || undefined;
    }, 20_000);
    expect(done).toBeGreaterThanOrEqual(1000);
    // No poll or sweep in 10 minutes: the wake-up and the claims that follow drained them.
    expect(Date.now() - began).toBeLessThan(20_000);
    await eventually(async () => {
      const c = counts(worker);
      return (c.busy === 0 && c.ending === 0 && !c.claiming) || undefined;
    }, 5_000);
    await worker.stop();
    await client.stop();
  });

  it('an end refused by a cancel with compensation: counters return to 0, the run ends CANCELLED', async () => {
    let openGate!: () => void;
    const gate = new Promise<void>((r) => (openGate = r));
    let running = false;
    const undone: string[] = [];
    const engine = await h.engine(
      {
        gated: async () =>
          Durable.step(
            'wait',
            async () => {
              running = true;
              await gate;
              return 'a';
            },
            { compensate: () => void undone.push('wait') },
          ),
        quick: async () => Durable.step('one', async () => 'b'),
      },
      { concurrency: 1 },
    );
    const a = await engine.startRun('gated', null, { id: 'c-a' });
    await eventually(async () => running || undefined);
    const blocker = await h.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`UPDATE durable_runs SET cancel_requested_at = now() WHERE id = 'c-a'`);
      openGate();
      await eventually(async () => counts(engine).ending === 1 || undefined, 5_000);
      const b = await engine.startRun('quick', null, { id: 'c-b' });
      await expect(b.result({ timeoutMs: 10_000 })).resolves.toBe('b');
      await blocker.query('COMMIT');
    } finally {
      blocker.release();
    }
    await eventually(async () => {
      const [r] = await h.query(`SELECT status FROM durable_runs WHERE id = 'c-a'`);
      return r.status === 'CANCELLED' || undefined;
    }, 10_000);
    expect(undone).toEqual(['wait']);
    await eventually(async () => {
      const c = counts(engine);
      return (c.busy === 0 && c.ending === 0) || undefined;
    }, 5_000);
    await expect(a.result({ timeoutMs: 1_000 })).rejects.toThrow();
    await engine.stop();
  });

  it('graceful stop waits for a run whose end is being written', async () => {
    const engine = await h.engine({ one: async () => Durable.step('x', async () => 'x') }, { concurrency: 2, shutdownGraceMs: 5_000 });
    const blocker = await h.pool.connect();
    let stopped = false;
    try {
      await blocker.query('BEGIN');
      await blocker.query(`LOCK TABLE durable_steps IN EXCLUSIVE MODE`);
      await engine.startRun('one', null, { id: 'g-a' });
      await eventually(async () => counts(engine).ending === 1 || undefined, 5_000);
      const stopping = engine.stop().then(() => (stopped = true));
      await sleep(500);
      expect(stopped).toBe(false);
      await blocker.query('COMMIT');
      await stopping;
    } finally {
      blocker.release();
    }
    const [r] = await h.query(`SELECT status FROM durable_runs WHERE id = 'g-a'`);
    expect(r.status).toBe('SUCCEEDED');
    expect(counts(engine)).toMatchObject({ busy: 0, ending: 0 });
  });
});
