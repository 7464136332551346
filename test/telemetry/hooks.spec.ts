import { Durable, type DurableEngine, type DurableLifecycleEvent } from 'nestjs-durable';
import { EngineHarness, eventually, sleep, STEADY } from '../support/engine-harness.js';

const HOOKS = { pollIntervalMs: 50, settleMs: 50, leaseMs: 15_000 };

/** Lifecycle hooks of the engine (no Nest): read from the run history after commit, per consumer. */
describe('lifecycle hooks', () => {
  let h: EngineHarness;
  let engine: DurableEngine;
  const got: DurableLifecycleEvent[] = [];
  const retried: DurableLifecycleEvent[] = [];
  let failOnce = true;
  let release: (() => void) | null = null;
  let tries = 0;
  const workflows = {
    ok: async () => Durable.step('a', async () => 1),
    flaky: async () =>
      Durable.step('b', async () => (tries++ === 0 ? Promise.reject(new Error('first try fails')) : 2), {
        retries: { maxAttempts: 2, initialDelayMs: 10 },
      }),
    bad: async () => Durable.step('c', async () => Promise.reject(new Error('no luck')), { retries: { maxAttempts: 1 } }),
    slow: async () => Durable.sleep(60_000),
  };

  beforeAll(async () => {
    h = await EngineHarness.create('hooks', STEADY);
    engine = await h.engine(workflows, { hooks: HOOKS }, false);
    engine.onEvent(['run.succeeded', 'run.failed', 'run.cancelled'], (e) => void got.push(e), { consumer: 'ends' });
    engine.onEvent(
      'step.retried',
      async (e) => {
        if (failOnce) {
          failOnce = false;
          throw new Error('handler hiccup');
        }
        retried.push(e);
      },
      { consumer: 'retries' },
    );
    await engine.start();
  });
  afterAll(() => h.close());

  it('delivers run ends and step retries after commit, with the workflow, once each; a throwing handler gets the event again', async () => {
    const ok = await engine.startRun('ok', {});
    const flaky = await engine.startRun('flaky', {});
    const bad = await engine.startRun('bad', {});
    const slow = await engine.startRun('slow', {});
    await ok.result({ timeoutMs: 10_000 });
    await flaky.result({ timeoutMs: 10_000 });
    await expect(bad.result({ timeoutMs: 10_000 })).rejects.toThrow('no luck');
    await engine.cancel(slow.id);
    await eventually(async () => got.length >= 4 && retried.length >= 1, 10_000, 'the hooks');
    await sleep(300); // nothing more comes
    const byRun = new Map(got.map((e) => [e.runId, e]));
    expect(got).toHaveLength(4);
    expect(byRun.get(ok.id)).toMatchObject({ type: 'run.succeeded', workflowName: 'ok' });
    expect(byRun.get(flaky.id)).toMatchObject({ type: 'run.succeeded', workflowName: 'flaky' });
    expect(byRun.get(bad.id)).toMatchObject({ type: 'run.failed', workflowName: 'bad', detail: { error: 'no luck' } });
    expect(byRun.get(slow.id)).toMatchObject({ type: 'run.cancelled', workflowName: 'slow' });
    // Delivered in history order.
    expect(got.map((e) => BigInt(e.id))).toEqual([...got.map((e) => BigInt(e.id))].sort((a, b) => (a < b ? -1 : 1)));
    expect(retried).toHaveLength(1); // the first delivery threw: delivered again, then never again
    expect(retried[0]).toMatchObject({
      type: 'step.retried',
      runId: flaky.id,
      detail: { step: 'b', attempt: 1, error: 'first try fails' },
    });

    const cursors = await engine.hookCursors();
    expect(cursors.map((c) => c.consumer)).toEqual(['ends', 'retries']);
    for (const c of cursors) expect(c.owner).toBe(engine.options.workerId);
  });

  it('a slow handler never holds up runs; a second instance does not deliver what the lease holder delivers', async () => {
    const gotB: DurableLifecycleEvent[] = [];
    const blocked: DurableLifecycleEvent[] = [];
    const other = await h.engine(workflows, { hooks: HOOKS }, false);
    other.onEvent(['run.succeeded', 'run.failed', 'run.cancelled'], (e) => void gotB.push(e), { consumer: 'ends' });
    other.onEvent(
      'run.succeeded',
      (e) => {
        blocked.push(e);
        if (blocked.length === 1) return new Promise<void>((r) => (release = r));
      },
      { consumer: 'blocking' },
    );
    await other.start();
    const before = got.length;
    const runs = await Promise.all(Array.from({ length: 5 }, () => other.startRun('ok', {})));
    // Every run finishes while the blocking consumer sits in its first delivery.
    for (const r of runs) await r.result({ timeoutMs: 10_000 });
    await eventually(async () => blocked.length === 1 && got.length - before + gotB.length >= 5, 10_000, 'deliveries');
    expect(blocked).toHaveLength(1);
    expect(got.length - before + gotB.length).toBe(5);
    expect(gotB).toHaveLength(0); // "ends" is held by the first engine's lease
    release?.();
    await eventually(async () => blocked.length === 5, 10_000, 'the blocking consumer to catch up');
  });

  it('rejects bad registrations with a clear error', async () => {
    const e = await h.engine(workflows, { hooks: HOOKS }, false);
    expect(() => e.onEvent('run.exploded' as never, () => {}, { consumer: 'x' })).toThrow(/unknown event type "run.exploded"/);
    expect(() => e.onEvent('run.failed', () => {}, { consumer: '' })).toThrow(/consumer/);
    e.onEvent('run.failed', () => {}, { consumer: 'x' });
    expect(() => e.onEvent('run.failed', () => {}, { consumer: 'x' })).toThrow(/registered twice/);
    const noHistory = await h.engine(workflows, { history: false }, false);
    expect(() => noHistory.onEvent('run.failed', () => {}, { consumer: 'y' })).toThrow(/history: true/);
    expect(() => engine.onEvent('run.failed', () => {}, { consumer: 'late' })).toThrow(/before the engine starts/);
  });
});
