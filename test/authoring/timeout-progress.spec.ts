import { Durable, Step, StepTimeoutError, WorkflowFailedError } from 'nestjs-durable';
import { EngineHarness, eventually, sleep, STEADY } from '../support/engine-harness.js';

/** @Step({ timeoutMs }) for plain steps, and Durable.progress() from long steps. */
describe('authoring: step timeouts and progress', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('timeout_progress', STEADY);
  });
  afterAll(() => h.close());

  it('a timed-out attempt fails with StepTimeoutError, is retried by the policy, and the retry succeeds', async () => {
    const attempts: Array<{ attempt: number; aborted: unknown }> = [];
    class Steps {
      n = 0;
      @Step({ timeoutMs: 150, retries: { maxAttempts: 3, initialDelayMs: 10 } })
      async slowThenFast(): Promise<string> {
        const attempt = ++this.n;
        const signal = Durable.signal();
        if (attempt === 1) {
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
          attempts.push({ attempt, aborted: signal.reason });
          throw signal.reason;
        }
        attempts.push({ attempt, aborted: signal.aborted });
        return `ok on attempt ${attempt}`;
      }
    }
    const s = new Steps();
    const e = await h.engine({ timed: async () => s.slowThenFast() });
    const handle = await e.startRun('timed', null);
    expect(await handle.result({ timeoutMs: 10_000 })).toBe('ok on attempt 2');
    expect(attempts[0].aborted).toBeInstanceOf(StepTimeoutError);
    expect(attempts[1]).toEqual({ attempt: 2, aborted: false });
    const run = await e.getRun(handle.id);
    expect(run?.steps[0]).toMatchObject({ name: 'slowThenFast', status: 'SUCCEEDED', attempts: 2 });
    const retried = (await e.getRunEvents(handle.id)).find((x) => x.kind === 'step_retried');
    expect(String(retried?.detail?.error)).toContain('timed out after 150 ms');
  });

  it('code that ignores the signal is never run twice at the same time: the retry waits until it settles', async () => {
    let running = 0;
    let maxRunning = 0;
    const starts: number[] = [];
    class Steps {
      @Step({ timeoutMs: 100, retries: { maxAttempts: 2, initialDelayMs: 0 } })
      async stubborn(): Promise<string> {
        running++;
        maxRunning = Math.max(maxRunning, running);
        starts.push(Date.now());
        try {
          await sleep(starts.length === 1 ? 600 : 10); // ignores Durable.signal()
          return 'done';
        } finally {
          running--;
        }
      }
    }
    const s = new Steps();
    const e = await h.engine({ stubborn: async () => s.stubborn() });
    const t0 = Date.now();
    const handle = await e.startRun('stubborn', null);
    expect(await handle.result({ timeoutMs: 10_000 })).toBe('done');
    expect(maxRunning).toBe(1);
    expect(starts).toHaveLength(2);
    expect(starts[1] - t0).toBeGreaterThanOrEqual(550); // after the first attempt's code ended, not at its timeout
  });

  it('the last timed-out attempt fails the step with STEP_TIMEOUT', async () => {
    const e = await h.engine({
      alwaysSlow: async () =>
        Durable.step(
          'slow',
          () => new Promise((_, reject) => Durable.signal().addEventListener('abort', () => reject(Durable.signal().reason))),
          {
            timeoutMs: 50,
            retries: 1,
          },
        ),
    });
    const handle = await e.startRun('alwaysSlow', null);
    const err = (await handle.result({ timeoutMs: 10_000 }).catch((x) => x)) as WorkflowFailedError;
    expect(err.runError).toMatchObject({ code: 'STEP_TIMEOUT', name: 'StepTimeoutError' });
    const run = await e.getRun(handle.id);
    expect(run?.steps[0]).toMatchObject({ status: 'FAILED', attempts: 2 });
  });

  it('Durable.progress() from a long step shows in getRun while it runs (throttled), and is gone once the step is recorded', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    class Steps {
      @Step() async long(total: number) {
        for (let i = 1; i <= total; i++) Durable.progress({ done: i, total }); // chatty: written at most once a second
        await gate;
        return total;
      }
    }
    const s = new Steps();
    // Heartbeats renew the lease with an UPDATE too: slow enough here that none falls in the step, so
    // the updates counted below are the progress writes and the run's end.
    const e = await h.engine({ progressing: async () => s.long(500) }, { leaseMs: 60_000, heartbeatMs: 20_000 });
    const before = await h.query(`SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'durable_runs'`);
    const began = Date.now();
    const handle = await e.startRun('progressing', null);
    const seen = await eventually(async () => (await e.getRun(handle.id))?.progress, 5_000, 'progress to show');
    expect(seen!.steps[0]).toMatchObject({ seq: 0, step: 'long' });
    expect(seen!.at).toBeInstanceOf(Date);
    await eventually(
      async () => ((await e.getRun(handle.id))?.progress?.steps[0].value as { done: number })?.done === 500,
      5_000,
      'the last value',
    );
    release();
    await handle.result({ timeoutMs: 5_000 });
    const seconds = Math.ceil((Date.now() - began) / 1000);
    expect((await e.getRun(handle.id))?.progress).toBeNull();
    await sleep(600); // pg_stat counters are flushed at most every 500 ms
    const after = await h.query(`SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = 'durable_runs'`);
    // 500 reports → at most one progress write a second while the step ran (the run was inserted
    // claimed), plus the run's end: a few, however slow the machine, never one per report.
    expect(Number(after[0].n_tup_upd) - Number(before[0].n_tup_upd)).toBeLessThanOrEqual(seconds + 2);
  });

  it('compensation after partial progress: cancelled midway through a long step, only the steps that completed are undone', async () => {
    const log: string[] = [];
    class Steps {
      @Step({ compensate: 'unload' }) async load(batch: number) {
        log.push(`load ${batch}`);
        return batch;
      }
      @Step() async unload(batch: number) {
        log.push(`unload ${batch}`);
      }
      /** Processes items, reporting progress; stops when its signal aborts (cancel). */
      @Step({ compensate: 'unload' }) async process(total: number) {
        for (let i = 1; i <= total; i++) {
          Durable.progress({ done: i, total });
          await Durable.sleep(20); // a plain pause inside a step: ends (throws) when the signal aborts
        }
        return total;
      }
    }
    const s = new Steps();
    const e = await h.engine({
      partial: async () => {
        await s.load(1);
        await s.load(2);
        await s.process(1_000);
        await s.load(3);
      },
    });
    const handle = await e.startRun('partial', null);
    const done = async () => ((await e.getRun(handle.id))?.progress?.steps[0]?.value as { done: number } | undefined)?.done ?? 0;
    await eventually(async () => (await done()) > 5, 5_000, 'progress');
    await e.cancel(handle.id, { compensate: true });
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow('was cancelled');
    expect(log).toEqual(['load 1', 'load 2', 'unload 2', 'unload 1']); // process never completed: nothing of it to undo
    const run = await e.getRun(handle.id);
    expect(run?.status).toBe('CANCELLED');
    expect(run?.progress).toBeNull();
    expect(run?.steps.map((x) => [x.seq, x.name, x.compensates])).toEqual([
      [0, 'load', null],
      [1, 'load', null],
      [3, 'compensate:load', 1],
      [4, 'compensate:load', 0],
    ]);
  });

  it('Durable.progress() outside a step, or with a value too large, is a typed error', async () => {
    const errors: unknown[] = [];
    const e = await h.engine({
      badProgress: async () => {
        try {
          Durable.progress(1);
        } catch (err) {
          errors.push(err);
        }
        await Durable.step('big', () => {
          try {
            Durable.progress('x'.repeat(5_000));
          } catch (err) {
            errors.push(err);
          }
        });
      },
    });
    await (await e.startRun('badProgress', null)).result({ timeoutMs: 5_000 });
    expect(errors.map((x) => (x as { code: string }).code)).toEqual(['NOT_IN_WORKFLOW', 'PAYLOAD_TOO_LARGE']);
    expect(() => Durable.progress(1)).toThrow(/inside a step/);
  });
});
