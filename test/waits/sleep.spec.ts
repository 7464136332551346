import { Durable, Step } from 'nestjs-durable';
import { EngineHarness, eventually, sleep, STEADY } from '../support/engine-harness.js';

/** Durable.sleep: in memory below the threshold, suspended above it; replay sleeps only the remainder. */
describe('waits: Durable.sleep', () => {
  let h: EngineHarness;
  const executed: string[] = [];
  class Steps {
    @Step() async mark(label: string) {
      executed.push(label);
      return label;
    }
  }
  const steps = new Steps();

  beforeAll(async () => {
    h = await EngineHarness.create('sleep', STEADY);
  });
  afterAll(() => h.close());
  beforeEach(() => (executed.length = 0));

  it('a short sleep stays in memory (run keeps RUNNING) and is recorded with its wake time', async () => {
    const e = await h.engine(
      {
        shortSleep: async () => {
          await steps.mark('a');
          await Durable.sleep(300);
          return steps.mark('b');
        },
      },
      { inMemoryWaitMaxMs: 1_000, workerId: 'short' },
    );
    const t0 = Date.now();
    const handle = await e.startRun('shortSleep', null);
    await sleep(150);
    expect((await e.getRun(handle.id))?.status).toBe('RUNNING');
    expect(await handle.result({ timeoutMs: 5_000 })).toBe('b');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    const run = await e.getRun(handle.id);
    expect(run?.steps.map((s) => s.name)).toEqual(['mark', 'durable.sleep', 'mark']);
    expect(run?.steps[1].output).toBeInstanceOf(Date);
    expect(run?.leaseEpoch).toBe(1); // never suspended
  });

  it('a long sleep suspends the run: WAITING, no lease, available_at = wake time; then completes after it', async () => {
    const e = await h.engine(
      {
        longSleep: async () => {
          await steps.mark('before');
          await Durable.sleep(1_500);
          return steps.mark('after');
        },
      },
      { inMemoryWaitMaxMs: 500, workerId: 'long' },
    );
    const handle = await e.startRun('longSleep', null);
    const waiting = await eventually(
      async () => {
        const r = await e.getRun(handle.id);
        return r?.status === 'WAITING' ? r : null;
      },
      5_000,
      'the run to suspend',
    );
    const wake = waiting!.steps[1].output as Date;
    expect(waiting!.leaseOwner).toBeNull();
    expect(waiting!.leaseExpiresAt).toBeNull();
    expect(waiting!.availableAt.getTime()).toBe(wake.getTime());
    expect(await handle.result({ timeoutMs: 10_000 })).toBe('after');
    const done = await e.getRun(handle.id);
    expect(done!.finishedAt!.getTime()).toBeGreaterThanOrEqual(wake.getTime());
    expect(executed).toEqual(['before', 'after']); // the replay skipped the recorded step
    expect(done?.leaseEpoch).toBe(2);
    const kinds = (await e.getRunEvents(handle.id)).map((x) => x.kind);
    expect(kinds).toEqual(['created', 'claimed', 'suspended', 'woken', 'completed']);
  });

  it('sleeping runs hold no worker slot: concurrency 1 runs 3 sleepers and a quick run meanwhile', async () => {
    const e = await h.engine(
      {
        slotSleeper: async () => {
          await Durable.sleep(1_500);
          return 'slept';
        },
        slotQuick: async () => steps.mark('quick'),
      },
      { inMemoryWaitMaxMs: 200, concurrency: 1, workerId: 'slots' },
    );
    const sleepers = await Promise.all([1, 2, 3].map(() => e.startRun('slotSleeper', null)));
    await eventually(
      async () => {
        const [{ n }] = await h.query(
          `SELECT count(*)::int AS n FROM durable_runs WHERE workflow_name = 'slotSleeper' AND status = 'WAITING'`,
        );
        return n === 3;
      },
      5_000,
      'three sleepers suspended at once',
    );
    const quick = await e.startRun('slotQuick', null);
    expect(await quick.result({ timeoutMs: 1_000 })).toBe('quick');
    for (const s of sleepers) expect(await s.result({ timeoutMs: 10_000 })).toBe('slept');
  });

  it('a replay after a crash sleeps only the remainder of a recorded sleep', async () => {
    const e = await h.engine(
      {
        remainder: async () => {
          await Durable.sleep(60_000);
          return steps.mark('woke');
        },
      },
      { workerId: 'remainder' },
    );
    // The execution that recorded the sleep (wake in 400 ms) died: the run is claimable again.
    // (One statement: a worker must not claim the run before its step exists.)
    await h.query(`WITH r AS (INSERT INTO durable_runs (id, workflow_name, attempt, lease_epoch) VALUES ('rem-1', 'remainder', 1, 1) RETURNING id)
      INSERT INTO durable_steps (run_id, seq, name, status, output) SELECT r.id, 0, 'durable.sleep', 'SUCCEEDED',
       jsonb_build_object('$durable', 'Date', 'v', to_char((now() + interval '400 milliseconds') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
      FROM r`);
    const t0 = Date.now();
    expect(await e.handle('rem-1').result({ timeoutMs: 5_000 })).toBe('woke');
    expect(Date.now() - t0).toBeLessThan(3_000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
  });

  it('on graceful shutdown a run in an in-memory sleep suspends at once (WAITING until its wake time)', async () => {
    const wf = {
      shutdownSleeper: async () => {
        await Durable.sleep(2_000);
        return steps.mark('after shutdown');
      },
    };
    const e = await h.engine(wf, { workerId: 'draining', inMemoryWaitMaxMs: 5_000, shutdownGraceMs: 10_000 });
    const handle = await e.startRun('shutdownSleeper', null);
    await eventually(async () => (await e.getRun(handle.id))?.steps.length === 1, 5_000, 'the sleep to be recorded');
    const t0 = Date.now();
    await e.stop();
    expect(Date.now() - t0).toBeLessThan(1_000); // not held up by the 2 s sleep
    const run = await h.engines[0].getRun(handle.id);
    expect(run?.status).toBe('WAITING');
    expect(run?.availableAt.getTime()).toBe((run?.steps[0].output as Date).getTime());
    const next = await h.engine(wf, { workerId: 'next' });
    expect(await next.handle(handle.id).result({ timeoutMs: 10_000 })).toBe('after shutdown');
  });

  it('works without an engine connection of its own (every statement through Prisma, polling)', async () => {
    const { DurableEngine, WorkflowRegistry } = await import('nestjs-durable');
    const registry = new WorkflowRegistry();
    const reg = (name: string, run: (i: any) => Promise<unknown>) => registry.register({ name, queue: 'prisma-only', options: {}, run });
    reg('viaPrisma', async () => {
      await Durable.sleep(600);
      await Durable.setEvent('stage', 'recv');
      const msg = await Durable.recv<string>('m', { timeoutMs: 10_000 });
      const child = await Durable.startChild<number>('viaPrismaChild', 4);
      return { msg, child: await child.result() };
    });
    reg('viaPrismaChild', async (n: number) => n * 10);
    const e = new DurableEngine({
      registry,
      prisma: h.prisma as never,
      options: { pollIntervalMs: 100, inMemoryWaitMaxMs: 200, suspendGraceMs: 100 },
    });
    await e.start();
    try {
      const handle = await e.startRun('viaPrisma', null);
      expect(await e.getEvent(handle.id, 'stage', { timeoutMs: 10_000 })).toBe('recv');
      await e.send(handle.id, 'm', 'hi');
      expect(await handle.result({ timeoutMs: 15_000 })).toEqual({ msg: 'hi', child: 40 });
    } finally {
      await e.stop();
    }
  });

  it('Durable.sleep inside a step is a plain pause; bad arguments are typed errors', async () => {
    class Inner {
      @Step() async pause() {
        await Durable.sleep(50);
        return 'paused';
      }
    }
    const inner = new Inner();
    const e = await h.engine(
      {
        sleepInStep: async () => inner.pause(),
        badSleep: async () => Durable.sleep(-1),
      },
      { workerId: 'misc' },
    );
    expect(await (await e.startRun('sleepInStep', null)).result({ timeoutMs: 5_000 })).toBe('paused');
    await expect((await e.startRun('badSleep', null)).result({ timeoutMs: 5_000 })).rejects.toThrow(
      /Durable.sleep\(\): ms must be a finite number/,
    );
    await expect(Durable.sleep(10)).rejects.toThrow(/can only be called inside a running workflow/);
  });
});
