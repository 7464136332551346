import { Step, WorkflowFailedError } from 'nestjs-durable';
import { EngineHarness, eventually, sleep, STEADY } from '../support/engine-harness.js';

/** Replay from checkpoints, determinism, retries with back-off, graceful hand-over. */
describe('engine: replay, determinism, retries, shutdown', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('replay', STEADY);
  });
  afterAll(() => h.close());

  /**
   * A run whose execution recorded `steps` and died, inserted in ONE statement so no worker can claim
   * it in between; attempt and lease epoch `attempt` (steps are written only under a lease, so at least 1).
   */
  const seedRun = (id: string, workflow: string, steps: Array<[number, string, unknown]>, attempt = 1) =>
    h.query(
      `WITH r AS (INSERT INTO durable_runs (id, workflow_name, attempt, lease_epoch) VALUES ($1, $2, $4, $4) RETURNING id)
       INSERT INTO durable_steps (run_id, seq, name, status, output)
       SELECT r.id, s.seq, s.name, 'SUCCEEDED', s.output FROM r, jsonb_to_recordset($3::jsonb) AS s(seq int, name text, output jsonb)`,
      [id, workflow, JSON.stringify(steps.map(([seq, name, output]) => ({ seq, name, output }))), attempt],
    );

  class Steps {
    executed: string[] = [];
    failuresLeft = 0;
    attemptsAt: number[] = [];
    @Step() async fetch(id: number) {
      this.executed.push(`fetch ${id}`);
      return id * 10;
    }
    @Step({ name: 'renamed' }) async other() {
      this.executed.push('other');
      return 0;
    }
    @Step({ retries: { maxAttempts: 4, initialDelayMs: 100, backoffFactor: 2 } }) async flaky() {
      this.attemptsAt.push(Date.now());
      if (this.failuresLeft-- > 0) throw new Error('temporary');
      return 'ok';
    }
    @Step({ retries: 1 }) async slow(ms: number) {
      this.executed.push('slow start');
      await sleep(ms);
      this.executed.push('slow end');
      return ms;
    }
  }

  it('replays recorded steps instead of executing them again', async () => {
    const steps = new Steps();
    const engine = await h.engine(
      { replay: async () => [await steps.fetch(1), await steps.fetch(2), await steps.fetch(3)] },
      { workerId: 'replay' },
    );
    // A run whose first two steps were checkpointed by an execution that died.
    await seedRun(
      'rp',
      'replay',
      [
        [0, 'fetch', 111],
        [1, 'fetch', 222],
      ],
      1,
    );
    expect(await engine.handle('rp').result({ timeoutMs: 10_000 })).toEqual([111, 222, 30]);
    expect(steps.executed).toEqual(['fetch 3']);
    const run = await engine.getRun('rp');
    expect(run).toMatchObject({ status: 'SUCCEEDED', attempt: 2, leaseEpoch: 2 });
  });

  it('fails the run with a determinism error naming run, seq and both names', async () => {
    const steps = new Steps();
    const engine = await h.engine(
      {
        changed: async () => {
          await steps.fetch(1);
          await steps.fetch(2);
        },
      },
      { workerId: 'det' },
    );
    await seedRun('det-1', 'changed', [
      [0, 'fetch', 10],
      [1, 'renamed', 0],
    ]);
    const err = (await engine
      .handle('det-1')
      .result({ timeoutMs: 10_000 })
      .catch((e: Error) => e)) as Error;
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(err.message).toMatch(/Run det-1: step #1 was recorded as "renamed" but the workflow code now calls "fetch"/);
    expect(steps.executed).toEqual([]);
  });

  it('keeps a determinism error fatal even if workflow code catches it', async () => {
    const steps = new Steps();
    const engine = await h.engine(
      {
        swallow: async () => {
          try {
            await steps.fetch(1);
          } catch {
            /* ignored */
          }
          return 'done';
        },
      },
      { workerId: 'sw' },
    );
    await seedRun('det-2', 'swallow', [[0, 'renamed', 0]]);
    await expect(engine.handle('det-2').result({ timeoutMs: 10_000 })).rejects.toThrow(/recorded as "renamed"/);
  });

  it('retries a failing step with exponential back-off and jitter, then records the attempts', async () => {
    const steps = new Steps();
    steps.failuresLeft = 2;
    const engine = await h.engine({ retrying: async () => steps.flaky() }, { workerId: 'retry' });
    const handle = await engine.startRun('retrying', null);
    expect(await handle.result({ timeoutMs: 10_000 })).toBe('ok');
    const gaps = steps.attemptsAt.slice(1).map((t, i) => t - steps.attemptsAt[i]);
    expect(gaps).toHaveLength(2);
    expect(gaps[0]).toBeGreaterThanOrEqual(45); // 100 ms × [0.5, 1]
    expect(gaps[1]).toBeGreaterThanOrEqual(95); // 200 ms × [0.5, 1]
    const run = await engine.getRun(handle.id);
    expect(run?.steps[0]).toMatchObject({ name: 'flaky', status: 'SUCCEEDED', attempts: 3 });
  });

  it('gives up after maxAttempts and stores the final error with the step', async () => {
    const steps = new Steps();
    steps.failuresLeft = 10;
    const engine = await h.engine({ exhausted: async () => steps.flaky() }, { workerId: 'exh' });
    const handle = await engine.startRun('exhausted', null);
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow(/temporary/);
    expect(steps.attemptsAt).toHaveLength(4);
    const run = await engine.getRun(handle.id);
    expect(run?.steps[0]).toMatchObject({ status: 'FAILED', attempts: 4, error: { message: 'temporary', step: 'flaky', attempts: 4 } });
    expect(run?.error).toMatchObject({ message: 'temporary' });
  });

  it('on shutdown drains up to the grace period, then hands the run back to another instance at once', async () => {
    const a = new Steps();
    const b = new Steps();
    // Long lease: the hand-over must not wait for it to expire.
    const opts = { leaseMs: 60_000, heartbeatMs: 1_000, shutdownGraceMs: 200, pollIntervalMs: 60_000 };
    const engineA = await h.engine({ handover: async () => [await a.slow(3_000), await a.fetch(7)] }, { ...opts, workerId: 'A' });
    const handle = await engineA.startRun('handover', null);
    await eventually(async () => a.executed.includes('slow start'), 5_000, 'A to start the slow step');
    const engineB = await h.engine({ handover: async () => [await b.slow(10), await b.fetch(7)] }, { ...opts, workerId: 'B' });
    const stoppedAt = Date.now();
    await engineA.stop();
    expect(Date.now() - stoppedAt).toBeLessThan(3_000);
    expect(await engineB.handle(handle.id).result({ timeoutMs: 10_000 })).toEqual([10, 70]);
    expect(Date.now() - stoppedAt).toBeLessThan(10_000); // far below the 60 s lease
    expect(b.executed).toEqual(['slow start', 'slow end', 'fetch 7']);
    const run = await engineB.getRun(handle.id);
    expect(run).toMatchObject({ status: 'SUCCEEDED', attempt: 2, leaseEpoch: 2 });
  });
});
