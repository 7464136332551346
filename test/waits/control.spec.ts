import { Durable, NonRetryableError, Step, WorkflowCancelledError, WorkflowFailedError } from 'nestjs-durable';
import { EngineHarness, eventually, sleep, STEADY } from '../support/engine-harness.js';

/** Cancel / resume, deadlines, recorded now/random/uuid, events, run history. */
describe('waits: cancel, resume, deadlines, events, history', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('control', STEADY);
  });
  afterAll(() => h.close());

  const status = async (id: string) => (await h.query(`SELECT status FROM durable_runs WHERE id = $1`, [id]))[0]?.status;

  it('cancel during a long step: the step sees Durable.signal() abort, status CANCELLED; resume continues from the checkpoint', async () => {
    const log: string[] = [];
    let longStepMs = 60_000;
    class Steps {
      @Step() async first() {
        log.push('first');
        return 1;
      }
      @Step({ retries: 0 }) async long() {
        log.push('long start');
        const signal = Durable.signal();
        await new Promise<void>((resolve, reject) => {
          const t = setTimeout(resolve, longStepMs);
          signal.addEventListener('abort', () => {
            clearTimeout(t);
            log.push('long aborted');
            reject(signal.reason);
          });
        });
        log.push('long end');
        return 2;
      }
    }
    const s = new Steps();
    const e = await h.engine({ cancellable: async () => (await s.first()) + (await s.long()) }, { workerId: 'cancel' });
    const handle = await e.startRun('cancellable', null);
    await eventually(async () => log.includes('long start'), 5_000, 'the long step to start');
    await e.cancel(handle.id);
    await eventually(async () => log.includes('long aborted'), 5_000, 'the abort signal');
    expect(await status(handle.id)).toBe('CANCELLED');
    await expect(handle.result({ timeoutMs: 1_000 })).rejects.toThrow(WorkflowCancelledError);
    await e.cancel(handle.id); // idempotent

    longStepMs = 10;
    await e.resume(handle.id);
    expect(await handle.result({ timeoutMs: 10_000 })).toBe(3);
    expect(log).toEqual(['first', 'long start', 'long aborted', 'long start', 'long end']); // "first" did not run again
    const kinds = (await e.getRunEvents(handle.id)).map((x) => x.kind);
    expect(kinds).toEqual(['created', 'claimed', 'cancelled', 'resumed', 'claimed', 'completed']);
  });

  it('resume of a FAILED run retries from the failed step, keeping the steps before it', async () => {
    let fail = true;
    const calls: string[] = [];
    class Steps {
      @Step() async ok() {
        calls.push('ok');
        return 'ok';
      }
      @Step({ retries: 0 }) async flaky() {
        calls.push('flaky');
        if (fail) throw new NonRetryableError('not yet');
        return 'fixed';
      }
    }
    const s = new Steps();
    const e = await h.engine({ resumable: async () => [await s.ok(), await s.flaky()] }, { workerId: 'resume' });
    const handle = await e.startRun('resumable', null);
    await expect(handle.result({ timeoutMs: 5_000 })).rejects.toThrow(WorkflowFailedError);
    fail = false;
    await e.resume(handle.id);
    expect(await handle.result({ timeoutMs: 5_000 })).toEqual(['ok', 'fixed']);
    expect(calls).toEqual(['ok', 'flaky', 'flaky']);
    const kinds = (await e.getRunEvents(handle.id)).map((x) => x.kind);
    expect(kinds).toEqual(['created', 'claimed', 'step_failed', 'failed', 'resumed', 'claimed', 'completed']);
  });

  it('a deadline applies to a suspended (sleeping) run: the sweeper fails it with a timeout error', async () => {
    const e = await h.engine(
      {
        sleepyDeadline: [
          async () => {
            await Durable.sleep(60_000);
            return 'never';
          },
          { timeoutMs: 800 },
        ],
      },
      { workerId: 'deadline', inMemoryWaitMaxMs: 200 },
    );
    const t0 = Date.now();
    const handle = await e.startRun('sleepyDeadline', null);
    await eventually(async () => (await status(handle.id)) === 'WAITING', 5_000, 'the run to suspend');
    const err = (await handle.result({ timeoutMs: 10_000 }).catch((x) => x)) as WorkflowFailedError;
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(err.runError).toMatchObject({ code: 'DEADLINE_EXCEEDED' });
    expect(Date.now() - t0).toBeLessThan(5_000);
    const events = await e.getRunEvents(handle.id);
    expect(events.at(-1)).toMatchObject({ kind: 'failed', detail: { reason: 'deadline' } });
    // A per-start override lifts it.
    const free = await e.startRun('sleepyDeadline', null, { timeoutMs: null });
    expect((await e.getRun(free.id))?.deadlineAt).toBeNull();
    await e.cancel(free.id);
  });

  it('Durable.now/random/uuid are recorded once and replayed identically after a suspension', async () => {
    let executions = 0;
    const e = await h.engine(
      {
        clocks: async () => {
          executions++;
          const first = { now: await Durable.now(), random: await Durable.random(), uuid: await Durable.uuid() };
          await Durable.sleep(700); // suspends: the rest runs in a replay
          return { first, again: { now: await Durable.now(), random: await Durable.random(), uuid: await Durable.uuid() } };
        },
      },
      { workerId: 'clocks', inMemoryWaitMaxMs: 100 },
    );
    const handle = await e.startRun('clocks', null);
    const out = (await handle.result({ timeoutMs: 10_000 })) as {
      first: { now: number; random: number; uuid: string };
      again: { now: number };
    };
    expect(executions).toBe(2);
    const run = await e.getRun(handle.id);
    expect(run?.steps.slice(0, 3).map((s) => s.output)).toEqual([out.first.now, out.first.random, out.first.uuid]);
    expect(out.first.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(out.again.now - out.first.now).toBeGreaterThanOrEqual(650);
  });

  it('setEvent publishes the latest value; getEvent waits for it, returns null on timeout or for an ended run', async () => {
    const e = await h.engine(
      {
        publisher: async () => {
          await Durable.setEvent('progress', { pct: 10 });
          await Durable.recv('continue', { timeoutMs: 10_000 });
          await Durable.setEvent('progress', { pct: 100, at: new Date(0) });
          return 'done';
        },
      },
      { workerId: 'events' },
    );
    const handle = await e.startRun('publisher', null, { delayMs: 300 });
    expect(await e.getEvent(handle.id, 'progress', { timeoutMs: 5_000 })).toEqual({ pct: 10 });
    expect(await e.getEvent(handle.id, 'missing', { timeoutMs: 200 })).toBeNull();
    await e.send(handle.id, 'continue', null);
    await handle.result({ timeoutMs: 5_000 });
    expect(await e.getEvent(handle.id, 'progress')).toEqual({ pct: 100, at: new Date(0) });
    const t0 = Date.now();
    expect(await e.getEvent(handle.id, 'missing', { timeoutMs: 5_000 })).toBeNull();
    expect(Date.now() - t0).toBeLessThan(500); // the run ended: no point waiting
  });

  it('history: 3 rows for a 3-step workflow (no extra statement); retries and failures recorded; off with history: false', async () => {
    let failures = 1;
    class Steps {
      @Step({ retries: { maxAttempts: 3, initialDelayMs: 10 } }) async step(i: number) {
        if (i === 1 && failures-- > 0) throw new Error('once');
        return i;
      }
    }
    const s = new Steps();
    const threeSteps = async () => [await s.step(0), await s.step(1), await s.step(2)];
    const e = await h.engine({ threeSteps }, { workerId: 'hist' });
    const handle = await e.startRun('threeSteps', null);
    await handle.result({ timeoutMs: 5_000 });
    const events = await e.getRunEvents(handle.id);
    expect(events.map((x) => x.kind)).toEqual(['created', 'claimed', 'step_retried', 'completed']);
    expect(events[2].detail).toMatchObject({ seq: 1, step: 'step', attempt: 1, error: 'once' });
    expect(events.every((x) => x.at instanceof Date && x.id > 0)).toBe(true);

    const again = await e.startRun('threeSteps', null);
    await again.result({ timeoutMs: 5_000 });
    expect((await e.getRunEvents(again.id)).map((x) => x.kind)).toEqual(['created', 'claimed', 'completed']);

    await e.stop();
    const quiet = await h.engine({ threeSteps }, { workerId: 'nohist', history: false });
    const q = await quiet.startRun('threeSteps', null);
    await q.result({ timeoutMs: 5_000 });
    await sleep(50);
    expect(await quiet.getRunEvents(q.id)).toEqual([]);
  });
});
