import { jest } from '@jest/globals';
import {
  DurableError,
  Step,
  UnknownWorkflowError,
  IdempotencyConflictError,
  WorkflowFailedError,
  NonRetryableError,
  Durable,
} from 'nestjs-durable';
import { EngineHarness, STEADY } from '../support/engine-harness.js';

class Steps {
  calls: string[] = [];
  @Step() async add(a: number, b: number) {
    this.calls.push(`add ${a}+${b}`);
    return a + b;
  }
  @Step() async when() {
    return new Date('2026-01-02T03:04:05.678Z');
  }
}

describe('engine basics (no Nest)', () => {
  let h: EngineHarness;
  const steps = new Steps();
  beforeAll(async () => {
    h = await EngineHarness.create('basics', STEADY);
    await h.engine({
      sum: async (input: { n: number }) => {
        let total = 0;
        for (let i = 1; i <= input.n; i++) total = await steps.add(total, i);
        return { total, at: await steps.when(), big: 10n ** 20n };
      },
      failing: async () => {
        await steps.add(1, 1);
        throw new Error('boom');
      },
    });
  });
  afterAll(() => h.close());

  it('runs a workflow to completion and returns its output losslessly', async () => {
    const engine = h.engines[0];
    const handle = await engine.startRun<{ total: number; at: Date; big: bigint }>('sum', { n: 3 });
    const out = await handle.result({ timeoutMs: 10_000 });
    expect(out.total).toBe(6);
    expect(out.at).toEqual(new Date('2026-01-02T03:04:05.678Z'));
    expect(out.big).toBe(10n ** 20n);
    const run = await engine.getRun(handle.id);
    expect(run?.status).toBe('SUCCEEDED');
    expect(run?.steps.map((s) => [s.seq, s.name, s.status])).toEqual([
      [0, 'add', 'SUCCEEDED'],
      [1, 'add', 'SUCCEEDED'],
      [2, 'add', 'SUCCEEDED'],
      [3, 'when', 'SUCCEEDED'],
    ]);
    expect(run?.leaseEpoch).toBe(1);
    expect(await handle.status()).toBe('SUCCEEDED');
  });

  it('runs a workflow whose deadline is further away than a timer can wait (over 24.8 days)', async () => {
    // Node fires a timer set past 2^31 - 1 ms at once: the worker's deadline timer stopped such a run right after every claim.
    const handle = await h.engines[0].startRun<{ total: number }>('sum', { n: 2 }, { timeoutMs: 30 * 24 * 3600_000 });
    expect((await handle.result({ timeoutMs: 10_000 })).total).toBe(3);
  });

  it('stores a failed run with its error and rejects result() with WorkflowFailedError', async () => {
    const handle = await h.engines[0].startRun('failing', null);
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow(WorkflowFailedError);
    const run = await h.engines[0].getRun(handle.id);
    expect(run?.status).toBe('FAILED');
    expect(run?.error).toMatchObject({ name: 'Error', message: 'boom' });
    expect((run?.error as { stack: string }).stack).toContain('boom');
  });

  it('rejects an unknown workflow name with the list of known ones', async () => {
    const err = await h.engines[0].startRun('nope', {}).catch((e) => e);
    expect(err).toBeInstanceOf(UnknownWorkflowError);
    expect(err.message).toContain('"failing", "sum"');
    expect(await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE workflow_name = 'nope'`)).toEqual([{ n: 0 }]);
  });

  it('is idempotent on the run id, and refuses the same id for another workflow', async () => {
    const a = await h.engines[0].startRun('sum', { n: 1 }, { id: 'order-42' });
    const b = await h.engines[0].startRun('sum', { n: 99 }, { id: 'order-42' });
    expect(b.id).toBe(a.id);
    expect(await b.result({ timeoutMs: 10_000 })).toMatchObject({ total: 1 });
    expect(await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE id = 'order-42'`)).toEqual([{ n: 1 }]);
    await expect(h.engines[0].startRun('failing', {}, { id: 'order-42' })).rejects.toThrow(IdempotencyConflictError);
  });

  it('rejects bad start options with typed errors and writes nothing', async () => {
    const before = await h.query(`SELECT count(*)::int AS n FROM durable_runs`);
    for (const opts of [{ id: '' }, { id: 'x'.repeat(300) }, { timeoutMs: -1 }, { priority: Number.NaN }, { runAt: new Date('nope') }]) {
      await expect(h.engines[0].startRun('sum', { n: 1 }, opts as never)).rejects.toBeInstanceOf(DurableError);
    }
    await expect(h.engines[0].startRun('sum', { f: () => 1 })).rejects.toThrow(
      /input of workflow "sum": cannot store the value at \$\.f: a function/,
    );
    expect(await h.query(`SELECT count(*)::int AS n FROM durable_runs`)).toEqual(before);
  });

  it('startMany accepts { workflow, input, options } and { name, input, opts } items', async () => {
    const [a, b] = await h.engines[0].startMany([
      { workflow: 'sum', input: { n: 2 }, options: { id: 'many-a' } },
      { name: 'sum', input: { n: 3 }, opts: { id: 'many-b' } },
    ]);
    expect([a.id, b.id]).toEqual(['many-a', 'many-b']);
    expect(await b.result({ timeoutMs: 10_000 })).toMatchObject({ total: 6 });
    await expect(h.engines[0].startMany([{ input: 1 } as never])).rejects.toThrow(/item 0 needs a "workflow" name/);
  });

  it('runs @Step methods as plain calls outside a workflow', async () => {
    expect(await steps.add(2, 3)).toBe(5);
    expect(Durable.inWorkflow()).toBe(false);
    expect(() => Durable.tx()).toThrow(/transactional/);
  });

  it('fails a step at once on NonRetryableError, with the step named in the error', async () => {
    const calls = jest.fn();
    class S {
      @Step({ retries: 5 }) async charge() {
        calls();
        throw new NonRetryableError('card declined');
      }
    }
    const s = new S();
    const engine = await h.engine({ nonRetry: async () => s.charge() }, { workerId: 'nr' });
    const handle = await engine.startRun('nonRetry', null);
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toThrow(/card declined/);
    expect(calls).toHaveBeenCalledTimes(1);
    const run = await engine.getRun(handle.id);
    expect(run?.steps[0]).toMatchObject({ name: 'charge', status: 'FAILED', attempts: 1 });
    expect(run?.steps[0].error).toMatchObject({ name: 'NonRetryableError', message: 'card declined', step: 'charge', seq: 0 });
  });
});
