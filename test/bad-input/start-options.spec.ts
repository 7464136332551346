import { DurableError } from 'nestjs-durable';
import { EngineHarness } from '../support/engine-harness.js';

/**
 * Start and result options out of range: each is a typed INVALID_ARGUMENT error naming the
 * option, thrown before anything is written. (Before: a fractional priority and a runAt the
 * database cannot store reached Postgres as raw errors, "invalid input syntax for type integer"
 * and "timestamp out of range"; result({ timeoutMs: NaN }) never returned.)
 */
describe('bad input: start and result options out of range', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('start_options');
    h.pool.on('error', () => {}); // see dangling-step.spec.ts
    await h.engine({ plain: async () => 'ok' }, { worker: false });
  });
  afterAll(() => h.close());
  const count = async () => (await h.query(`SELECT count(*)::int AS n FROM durable_runs`))[0].n;

  it.each([
    ['a fractional priority', { priority: 1.5 }, /priority must be an integer between -1000000 and 1000000 .*got 1.5/],
    ['a priority out of range', { priority: 2_000_000 }, /priority must be an integer/],
    ['a delay beyond a century', { delayMs: 1e15 }, /delayMs must be a number between 0 and 3153600000000/],
    ['a timeout of 0', { timeoutMs: 0 }, /timeoutMs must be a number between 1 and/],
    ['a timeout beyond a century', { timeoutMs: 1e14 }, /timeoutMs must be a number between 1 and 3153600000000/],
    ['a runAt the database cannot store', { runAt: new Date(-8e15) }, /runAt must be a valid Date within a century of now/],
    ['a runAt far in the future', { runAt: new Date(8.64e15) }, /runAt must be a valid Date within a century/],
    ['an id that is not a string', { id: 42 }, /Run id must be a non-empty string/],
    ['an empty queue name', { queue: '' }, /queue must be a non-empty string/],
    ['tags that are not an array', { tags: 'vip' }, /tags must be an array: pass an array of at most 20 strings of 1 to 100 characters/],
    ['an empty tag', { tags: [''] }, /tags has an entry that is not a string of the right length/],
    ['too many tags', { tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, /tags has 21 entries/],
    ['a tag with a NUL character', { tags: ['a\u0000b'] }, /tags has an entry with a NUL character/],
  ])('%s → INVALID_ARGUMENT, nothing written', async (_what, opts, message) => {
    const before = await count();
    const err = await h.engines[0].startRun('plain', null, opts as never).catch((e) => e);
    expect(err).toBeInstanceOf(DurableError);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message).toMatch(message);
    expect(await count()).toBe(before);
  });

  it('startMany checks every item before inserting any', async () => {
    const before = await count();
    const err = await h.engines[0]
      .startMany([
        { workflow: 'plain', input: 1 },
        { workflow: 'plain', input: 2, options: { priority: 2.5 } },
      ])
      .catch((e) => e);
    expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/priority must be an integer .*got 2.5/) });
    expect(await count()).toBe(before);
  });

  it('bulk() refuses an unknown action and a batch size out of range, changing nothing', async () => {
    await h.engines[0].startRun('plain', null, { delayMs: 3_600_000 });
    const pending = async () => (await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE status = 'PENDING'`))[0].n;
    const before = await pending();
    for (const [action, opts, message] of [
      ['explode', {}, /bulk action must be one of cancel, resume, retry, delete/],
      ['cancel', { batchSize: 0 }, /bulk batch size must be an integer between 1 and 1000/],
      ['cancel', { batchSize: 5000 }, /bulk batch size must be an integer between 1 and 1000/],
    ] as const) {
      const err = await h.engines[0].bulk(action as never, {}, opts).catch((e) => e);
      expect(err).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(message) });
    }
    expect(await pending()).toBe(before);
  });

  it('result() refuses a timeout that is not a number ≥ 0 (NaN used to wait forever)', async () => {
    const handle = await h.engines[0].startRun('plain', null);
    for (const timeoutMs of [Number.NaN, -1, '5' as unknown as number]) {
      const err = await handle.result({ timeoutMs }).catch((e) => e);
      expect(err).toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: expect.stringMatching(/result\(\): timeoutMs must be a number of milliseconds ≥ 0/),
      });
    }
  });
});
