import { Durable, WorkflowFailedError } from 'nestjs-durable';
import { EngineHarness } from '../support/engine-harness.js';

/**
 * Durable waits longer than the database can represent. Before: Durable.sleep(1e300) was accepted,
 * the statement recording its wake-up time failed ("interval out of range") on every retry, and
 * the run stayed RUNNING forever. Now: a typed INVALID_ARGUMENT error in the workflow (which fails
 * the run unless the workflow catches it), like a negative or NaN duration.
 */
describe('bad input: durable waits out of range', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('wait_range');
    h.pool.on('error', () => {}); // see dangling-step.spec.ts
    await h.engine({
      sleepFor: async (ms: number) => {
        await Durable.sleep(ms);
        return 'woke';
      },
      recvFor: async (ms: number) => Durable.recv('t', { timeoutMs: ms }),
      caught: async () => {
        try {
          await Durable.sleep(1e300);
        } catch (err) {
          return (err as { code: string }).code;
        }
      },
    });
  });
  afterAll(() => h.close());

  it.each([
    ['Durable.sleep', 'sleepFor', 1e300],
    ['Durable.sleep', 'sleepFor', 3.2e12],
    ['Durable.sleep', 'sleepFor', -1],
    ['Durable.recv', 'recvFor', 1e300],
    ['Durable.recv', 'recvFor', Number.NaN],
  ])('%s(%#) → the run fails at once with INVALID_ARGUMENT (not stuck RUNNING)', async (api, workflow, ms) => {
    const handle = await h.engines[0].startRun(workflow, ms);
    const err: any = await handle.result({ timeoutMs: 10_000 }).catch((e) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(err.message).toContain(`${api}(): `);
    expect(err.message).toMatch(/must be a finite number of milliseconds ≥ 0 and at most 3153600000000 \(a century/);
    expect(await handle.status()).toBe('FAILED');
  });

  it('the workflow can catch it like any typed error', async () => {
    expect(await (await h.engines[0].startRun('caught', null)).result({ timeoutMs: 10_000 })).toBe('INVALID_ARGUMENT');
  });
});
