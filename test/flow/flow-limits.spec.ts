import { DurableEngine, WorkflowRegistry } from 'nestjs-durable';
import { EngineHarness, eventually, FAST, sleep, STEADY } from '../support/engine-harness.js';

/**
 * Flow control inside one process: limits declared in the queues option are synced at boot and
 * a runtime limit wins over them until reset (across a restart); the concurrency key derived from
 * the input; what whyNotStarted and keyUsage say; a queue whose limits are removed goes back to the
 * plain claim and the in-process start.
 */
describe('flow control: limits, keys, and why a run has not started', () => {
  let h: EngineHarness;
  const release = new Map<string, () => void>();
  const gate = (id: string) => new Promise<void>((r) => release.set(id, r));
  const workflows = {
    tenantJob: [
      async (i: { tenant: string; id: string }) => {
        await gate(i.id);
        return i.tenant;
      },
      { queue: 'jobs', concurrencyKey: (i: { tenant: string }) => `tenant-${i.tenant}` },
    ],
    quick: [async () => 'ok', { queue: 'jobs' }],
  } as const;
  const status = async (id: string) => (await h.query(`SELECT status FROM durable_runs WHERE id = $1`, [id]))[0]?.status;
  const limitsRow = async () =>
    (await h.query(`SELECT global_concurrency, key_concurrency, source FROM durable_queue_limits WHERE queue = 'jobs'`))[0];

  beforeAll(async () => {
    h = await EngineHarness.create('flow_limits', STEADY);
  });
  afterAll(async () => {
    for (const r of release.values()) r();
    await h.close();
  });

  it('declared limits are synced at boot; a runtime limit is kept across a restart until reset', async () => {
    const declared = { queues: { jobs: { concurrency: 5, globalConcurrency: 3, keyConcurrency: 1 } } };
    const e1 = await h.engine(workflows as never, declared);
    expect(await limitsRow()).toEqual({ global_concurrency: 3, key_concurrency: 1, source: 'declared' });
    await e1.flowControl.setQueueLimits('jobs', { globalConcurrency: 2, keyConcurrency: 2 });
    await e1.stop();
    const e2 = await h.engine(workflows as never, declared);
    expect(await limitsRow()).toEqual({ global_concurrency: 2, key_concurrency: 2, source: 'runtime' });
    const reset = await e2.flowControl.resetQueueLimits('jobs');
    expect(reset).toMatchObject({ queue: 'jobs', globalConcurrency: 3, keyConcurrency: 1, source: 'declared' });
    await e2.stop();
    // an instance that no longer declares limits for the queue removes the declared row
    const e3 = await h.engine(workflows as never, { queues: { jobs: { concurrency: 5 } } });
    expect(await limitsRow()).toBeUndefined();
    await e3.stop();
    h.engines.length = 0;
  });

  it('the key comes from the input; whyNotStarted names the limit that holds a run back, keyUsage counts per key', async () => {
    const e = await h.engine(workflows as never, { queues: { jobs: { concurrency: 5, globalConcurrency: 2, keyConcurrency: 1 } } });
    await e.startRun('tenantJob', { tenant: 'a', id: 'a1' }, { id: 'a1' });
    await e.startRun('tenantJob', { tenant: 'a', id: 'a2' }, { id: 'a2' });
    await e.startRun('tenantJob', { tenant: 'b', id: 'b1' }, { id: 'b1' });
    // c1 only once the queue's two slots are taken: the round-robin over keys may otherwise serve c before b
    await eventually(async () => (await status('a1')) === 'RUNNING' && (await status('b1')) === 'RUNNING');
    await e.startRun('tenantJob', { tenant: 'c', id: 'c1' }, { id: 'c1' });
    await e.startRun('tenantJob', { tenant: 'c', id: 'later' }, { id: 'later', delayMs: 60_000 });
    await sleep(300);
    expect(await status('a2')).toBe('PENDING');
    expect(await status('c1')).toBe('PENDING');
    expect((await h.query(`SELECT concurrency_key FROM durable_runs WHERE id = 'a2'`))[0].concurrency_key).toBe('tenant-a');

    const a2 = await e.flowControl.whyNotStarted('a2');
    expect(a2).toMatchObject({ status: 'PENDING', concurrencyKey: 'tenant-a', claimable: false, queueRunning: 2, keyRunning: 1 });
    expect(a2!.reasons).toEqual(['queue jobs: 2/2 running across all instances', 'concurrency key tenant-a: 1/1']);
    expect((await e.flowControl.whyNotStarted('c1'))!.reasons).toEqual(['queue jobs: 2/2 running across all instances']);
    expect((await e.flowControl.whyNotStarted('later'))!.reasons[0]).toMatch(/^not due until \d{4}-.*Z \(in (59|60) s\)$/);
    expect((await e.flowControl.whyNotStarted('a1'))!).toMatchObject({ status: 'RUNNING', reasons: [], claimable: false });
    expect(await e.flowControl.whyNotStarted('no-such-run')).toBeNull();

    expect(await e.flowControl.keyUsage('jobs')).toEqual([
      { key: 'tenant-a', running: 1, due: 1, rateUsed: 0, rateLimitedUntil: null },
      { key: 'tenant-b', running: 1, due: 0, rateUsed: 0, rateLimitedUntil: null },
      { key: 'tenant-c', running: 0, due: 1, rateUsed: 0, rateLimitedUntil: null },
    ]);
    expect(await e.flowControl.queueLimits()).toMatchObject([
      { queue: 'jobs', globalConcurrency: 2, keyConcurrency: 1, source: 'declared', running: 2, due: 2 },
    ]);

    // raised at runtime: a2 (tenant-a's second) and c1 start; then the key limit lowered below what
    // runs: a2 keeps running, claims go on (tenant-a over its limit is skipped, not an error), and
    // tenant-a's next run waits until both of its running ones have ended
    await e.flowControl.setQueueLimits('jobs', { globalConcurrency: 4, keyConcurrency: 2 });
    await eventually(async () => (await status('a2')) === 'RUNNING' && (await status('c1')) === 'RUNNING');
    await e.flowControl.setQueueLimits('jobs', { globalConcurrency: 10, keyConcurrency: 1 });
    await e.startRun('tenantJob', { tenant: 'a', id: 'a3' }, { id: 'a3' });
    await sleep(300);
    expect((await e.flowControl.whyNotStarted('a3'))!.reasons).toEqual(['concurrency key tenant-a: 2/1']);
    release.get('a1')!();
    await eventually(async () => (await status('a1')) === 'SUCCEEDED');
    await sleep(300);
    expect(await status('a3')).toBe('PENDING');
    release.get('a2')!();
    await eventually(async () => (await status('a3')) === 'RUNNING');

    // limits removed at runtime: a new start takes the in-process path again
    await e.flowControl.setQueueLimits('jobs', { globalConcurrency: null, keyConcurrency: null });
    // (A start finds this process's free slots held while a claim is in flight, e.g. the one the
    // change woke: it then goes through the claim. So: start quick runs until one takes the
    // in-process path; each ends at once, so none keeps a slot.)
    let n = 0;
    const fast = await eventually(
      async () => {
        const id = `fast-${n++}`;
        await (await e.startRun('quick', null, { id })).result({ timeoutMs: 5_000 });
        const [r] = await h.query(`SELECT started_at = created_at AS in_process FROM durable_runs WHERE id = $1`, [id]);
        return r.in_process === true ? id : null;
      },
      10_000,
      'a start on the in-process path',
    );
    expect(await status(fast!)).toBe('SUCCEEDED');
    for (const r of release.values()) r();
  });

  it('without a connection of its own (every statement through Prisma) the limited claim runs in a Prisma transaction', async () => {
    const registry = new WorkflowRegistry();
    let running = 0;
    let most = 0;
    registry.register({
      name: 'viaPrisma',
      queue: 'prisma-q',
      options: {},
      run: async () => {
        most = Math.max(most, ++running);
        await sleep(50);
        running--;
        return 'ok';
      },
    });
    const e = new DurableEngine({
      registry,
      prisma: h.prisma as never,
      options: { ...FAST, concurrency: 5, queues: { 'prisma-q': { globalConcurrency: 2 } } },
    });
    h.engines.push(e);
    await e.start();
    const handles = await e.startMany(Array.from({ length: 10 }, (_, i) => ({ workflow: 'viaPrisma', input: i })));
    await Promise.all(handles.map((x) => x.result({ timeoutMs: 20_000 })));
    expect(most).toBe(2);
  });

  it('limits set elsewhere that this process has not read yet still hold for its in-process starts (checked by the insert)', async () => {
    let running = 0;
    let most = 0;
    const staleGate = async () => {
      most = Math.max(most, ++running);
      await sleep(100);
      running--;
      return 'ok';
    };
    // The limit below is written behind the engine's back (no announcement): until its next look at
    // the limits (every sweepIntervalMs, 2 s here) the engine thinks the queue is unlimited.
    const e = await h.engine({ staleGate: [staleGate, { queue: 'stale-q' }] } as never, { sweepIntervalMs: 2_000, concurrency: 5 });
    await h.query(`INSERT INTO durable_queue_limits (queue, global_concurrency, source) VALUES ('stale-q', 1, 'runtime')`);
    const handles = await Promise.all(Array.from({ length: 4 }, (_, i) => e.startRun('staleGate', i, {})));
    // None was inserted already claimed past the limit (at most the one the limited claim took since).
    const [{ running: atOnce }] = await h.query(
      `SELECT count(*)::int AS running FROM durable_runs WHERE workflow_name = 'staleGate' AND status = 'RUNNING'`,
    );
    expect(atOnce).toBeLessThanOrEqual(1);
    await Promise.all(handles.map((x) => x.result({ timeoutMs: 30_000 })));
    expect(most).toBe(1);
  });
});
