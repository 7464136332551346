import { DurableEngine, DurableError, InvalidOptionsError, WorkflowRegistry } from 'nestjs-durable';
import { EngineHarness } from '../support/engine-harness.js';

/**
 * Flow control given bad input: a concurrency key that is not a short string (start option, or
 * what a workflow's concurrencyKey(input) returns or throws), queue limits out of range in the
 * options or at runtime. Each is a typed error that says what to do, before anything is written.
 */
describe('bad input: flow control', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('flow_bad_input');
    h.pool.on('error', () => {}); // see dangling-step.spec.ts
    await h.engine(
      {
        plain: async () => 'ok',
        numberKey: [async () => 'ok', { concurrencyKey: (i: { n: number }) => i.n as never }],
        throwingKey: [
          async () => 'ok',
          {
            concurrencyKey: (i: { tenant?: string }) => {
              if (!i.tenant) throw new Error('input has no tenant');
              return i.tenant;
            },
          },
        ],
      },
      { worker: false },
    );
  });
  afterAll(() => h.close());
  const count = async () => (await h.query(`SELECT count(*)::int AS n FROM durable_runs`))[0].n;
  const engine = () => h.engines[0];

  it.each([
    ['an empty key', 'plain', null, { concurrencyKey: '' }, /the start option concurrencyKey must be a non-empty string of at most 256/],
    ['a 300-character key', 'plain', null, { concurrencyKey: 'k'.repeat(300) }, /concurrencyKey must be a non-empty string/],
    ['a number as key', 'plain', null, { concurrencyKey: 7 }, /concurrencyKey must be a non-empty string .*got 7/],
    [
      'a derived key that is a number',
      'numberKey',
      { n: 3 },
      {},
      /concurrencyKey\(input\) of workflow "numberKey" must be a non-empty string .*got 3/,
    ],
    ['a derived key that throws', 'throwingKey', {}, {}, /concurrencyKey\(input\) of workflow "throwingKey" threw: input has no tenant/],
  ])('%s → INVALID_ARGUMENT, nothing written', async (_what, workflow, input, opts, message) => {
    const before = await count();
    const err = await engine()
      .startRun(workflow, input, opts as never)
      .catch((e) => e);
    expect(err).toBeInstanceOf(DurableError);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(message);
    expect(await count()).toBe(before);
  });

  it('a start option null means no key, even where the workflow derives one', async () => {
    await engine().startRun('throwingKey', {}, { id: 'no-key', concurrencyKey: null });
    expect(await h.query(`SELECT concurrency_key FROM durable_runs WHERE id = 'no-key'`)).toEqual([{ concurrency_key: null }]);
  });

  it('@Workflow({ concurrencyKey }) that is not a function: InvalidOptionsError at registration', () => {
    const r = new WorkflowRegistry();
    expect(() => r.register({ name: 'w', queue: 'default', options: { concurrencyKey: 'tenant' as never }, run: async () => 1 })).toThrow(
      /concurrencyKey must be a function \(input\) => string \| null .*got "tenant".*a fixed key goes in the start option concurrencyKey/,
    );
  });

  it.each([
    [{ payments: { globalConcurrency: 0 } }, /queues\.payments\.globalConcurrency must be an integer between 1 and 1000000/],
    [{ payments: { keyConcurrency: 2.5 } }, /queues\.payments\.keyConcurrency must be an integer .*per concurrency key.*got 2\.5/],
    [{ payments: { globalConcurrency: 'ten' } }, /globalConcurrency must be an integer .*got "ten"/],
    [
      { payments: { concurency: 3 } },
      /queues\.payments has no option "concurency" \(a queue has concurrency, globalConcurrency, keyConcurrency, rateLimit, keyRateLimit\)/,
    ],
    [{ payments: null }, /queues\.payments must be an object/],
  ])('queues option %j → InvalidOptionsError', (queues, message) => {
    const err = (() => {
      try {
        new DurableEngine({ registry: new WorkflowRegistry(), connection: h.db.url, options: { queues: queues as never } });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(InvalidOptionsError);
    expect((err as Error).message).toMatch(message);
  });

  it.each([
    ['an empty queue', '', { globalConcurrency: 1 }, /setQueueLimits: the queue must be a non-empty string/],
    [
      'a limit of 0',
      'q',
      { globalConcurrency: 0 },
      /limits\.globalConcurrency must be an integer between 1 and 1000000 .*or null for no limit/,
    ],
    ['a negative key limit', 'q', { keyConcurrency: -1 }, /limits\.keyConcurrency must be an integer/],
    [
      'an unknown limit',
      'q',
      { rate: 100 },
      /"rate" is not a limit \(a queue has globalConcurrency, keyConcurrency, rateLimit, keyRateLimit\)/,
    ],
    ['no object', 'q', 5, /the limits must be an object \{ globalConcurrency\?, keyConcurrency\?, rateLimit\?, keyRateLimit\? \}/],
  ])('setQueueLimits with %s → INVALID_ARGUMENT, nothing stored', async (_what, queue, limits, message) => {
    const err = await engine()
      .flowControl.setQueueLimits(queue, limits as never)
      .catch((e) => e);
    expect(err).toBeInstanceOf(DurableError);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(message);
    expect(await h.query(`SELECT queue FROM durable_queue_limits`)).toEqual([]);
  });

  it('keyUsage with a limit out of range → INVALID_ARGUMENT', async () => {
    await expect(engine().flowControl.keyUsage('q', { limit: 0 })).rejects.toThrow(/limit must be an integer between 1 and 1000/);
  });
});
