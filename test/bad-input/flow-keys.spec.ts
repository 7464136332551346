import { DurableEngine, DurableError, InvalidOptionsError, WorkflowRegistry } from 'nestjs-durable';
import { EngineHarness } from '../support/engine-harness.js';

/**
 * Rate limits, singleton runs and debounce given bad input: a rate limit out of range (options or
 * runtime), a dedupe key or debounce settings that make no sense, combinations that cannot hold
 * (debounce with an id, a delay, a dedupe key; either in startMany). Each is a typed error that
 * says what to do, before anything is written.
 */
describe('bad input: rate limits, dedupe keys, debounce', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('flow_keys_bad_input');
    await h.engine({ plain: async () => 'ok' }, { worker: false });
  });
  afterAll(() => h.close());
  const count = async () => (await h.query(`SELECT count(*)::int AS n FROM durable_runs`))[0].n;
  const engine = () => h.engines[0];

  it.each([
    ['an empty dedupe key', { dedupeKey: '' }, /dedupeKey must be a non-empty string of at most 256 characters \(got ""\)/],
    ['a number as dedupe key', { dedupeKey: 5 }, /dedupeKey must be a non-empty string .*got 5/],
    ['debounce that is not an object', { debounce: 'doc-1' }, /debounce must be an object \{ key, periodMs, maxDelayMs\?, input\? \}/],
    ['debounce without a key', { debounce: { periodMs: 100 } }, /debounce\.key must be a non-empty string/],
    [
      'debounce without a period',
      { debounce: { key: 'k' } },
      /debounce\.periodMs must be a whole number of ms between 1 and 86400000 \(got undefined\)/,
    ],
    ['a debounce period of 2 days', { debounce: { key: 'k', periodMs: 172_800_000 } }, /debounce\.periodMs must be a whole number/],
    [
      'maxDelayMs below the period',
      { debounce: { key: 'k', periodMs: 1000, maxDelayMs: 500 } },
      /debounce\.maxDelayMs must be .* between periodMs and/,
    ],
    ['an unknown debounce option', { debounce: { key: 'k', periodMs: 10, timeout: 5 } }, /debounce has no option "timeout"/],
    ['debounce input "middle"', { debounce: { key: 'k', periodMs: 10, input: 'middle' } }, /debounce\.input must be 'first' or 'last'/],
    ['debounce with an id', { id: 'x', debounce: { key: 'k', periodMs: 10 } }, /debounce cannot be combined with id/],
    [
      'debounce with a delay',
      { delayMs: 5, debounce: { key: 'k', periodMs: 10 } },
      /debounce decides when the run starts: drop runAt\/delayMs/,
    ],
    ['debounce with a dedupe key', { dedupeKey: 'd', debounce: { key: 'k', periodMs: 10 } }, /debounce and dedupeKey cannot be combined/],
  ])('start with %s → INVALID_ARGUMENT, nothing written', async (_what, opts, message) => {
    const before = await count();
    const err = await engine()
      .startRun('plain', null, opts as never)
      .catch((e) => e);
    expect(err).toBeInstanceOf(DurableError);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(message);
    expect(await count()).toBe(before);
  });

  it('startMany with a dedupe key or debounce → INVALID_ARGUMENT naming the item, nothing written', async () => {
    const before = await count();
    const err = await engine()
      .startMany([
        { workflow: 'plain', input: 1 },
        { workflow: 'plain', input: 2, options: { dedupeKey: 'd' } },
      ])
      .catch((e) => e);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(/startMany: item 1 has a dedupeKey or debounce; start such runs one by one with start\(\)/);
    expect(await count()).toBe(before);
  });

  it.each([
    [
      { api: { rateLimit: { limit: 0, periodMs: 1000 } } },
      /queues\.api\.rateLimit\.limit must be an integer between 1 and 10000 \(got 0\)/,
    ],
    [{ api: { rateLimit: 100 } }, /queues\.api\.rateLimit must be \{ limit, periodMs \}.*or null for no rate limit \(got 100\)/],
    [
      { api: { keyRateLimit: { limit: 5, periodMs: 0 } } },
      /queues\.api\.keyRateLimit\.periodMs must be a whole number of ms between 1 and 86400000/,
    ],
    [
      { api: { rateLimit: { limit: 5, period: 1000 } } },
      /queues\.api\.rateLimit has no option "period" \(a rate limit has limit, periodMs\)/,
    ],
  ])('queues option %j → InvalidOptionsError', (queues, message) => {
    let err: unknown;
    try {
      new DurableEngine({ registry: new WorkflowRegistry(), connection: h.db.url, options: { queues: queues as never } });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidOptionsError);
    expect((err as Error).message).toMatch(message);
  });

  it.each([
    [
      'a rate of 20,000',
      { rateLimit: { limit: 20_000, periodMs: 1000 } },
      /limits\.rateLimit\.limit must be an integer between 1 and 10000/,
    ],
    ['a key rate without period', { keyRateLimit: { limit: 5 } }, /limits\.keyRateLimit\.periodMs must be a whole number/],
  ])('setQueueLimits with %s → INVALID_ARGUMENT, nothing stored', async (_what, limits, message) => {
    const err = await engine()
      .flowControl.setQueueLimits('api', limits as never)
      .catch((e) => e);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(message);
    expect(await h.query(`SELECT queue FROM durable_queue_limits`)).toEqual([]);
  });
});
