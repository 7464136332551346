import { DurableError, type DurableEngine } from 'nestjs-durable';
import { EngineHarness } from '../support/engine-harness.js';

/** Arguments that are hard to print (no prototype, a BigInt, a circular object): a typed error, never a TypeError. */
describe('hardening: arguments that are hard to print', () => {
  let h: EngineHarness;
  let engine: DurableEngine;
  beforeAll(async () => {
    h = await EngineHarness.create('hostile_args');
    engine = await h.engine({ echo: async (input: unknown) => input }, { worker: false });
  });
  afterAll(() => h.close());

  const circular = (): unknown => {
    const o: Record<string, unknown> = {};
    o.self = o;
    return o;
  };
  const values: [string, () => unknown][] = [
    ['a null-prototype object', () => Object.create(null)],
    ['a BigInt', () => 10n],
    ['a circular object', circular],
    ['a symbol', () => Symbol('s')],
  ];

  it.each(values)('%s as a run id, topic, key, queue, priority, delay or runAt: a DurableError', async (_what, make) => {
    const bad = make() as never;
    const calls: [string, () => Promise<unknown>][] = [
      ['start id', () => engine.startRun('echo', 1, { id: bad })],
      ['start queue', () => engine.startRun('echo', 1, { queue: bad })],
      ['start priority', () => engine.startRun('echo', 1, { priority: bad })],
      ['start delayMs', () => engine.startRun('echo', 1, { delayMs: bad })],
      ['start runAt', () => engine.startRun('echo', 1, { runAt: bad })],
      ['start dedupeKey', () => engine.startRun('echo', 1, { dedupeKey: bad })],
      ['start concurrencyKey', () => engine.startRun('echo', 1, { concurrencyKey: bad })],
      ['send run id', () => engine.send(bad, 't', 1)],
      ['send topic', () => engine.send('r', bad, 1)],
      ['getEvent key', () => engine.getEvent('r', bad)],
      ['setQueueLimits queue', () => engine.flowControl.setQueueLimits(bad, {})],
    ];
    for (const [what, call] of calls) {
      const err = await call().then(
        () => null,
        (e: unknown) => e,
      );
      expect({ what, typed: err instanceof DurableError, err: String(err) }).toMatchObject({ what, typed: true });
    }
  });
});
