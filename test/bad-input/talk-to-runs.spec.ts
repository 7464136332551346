import { Test } from '@nestjs/testing';
import { Module } from '@nestjs/common';
import {
  CallbackRefusedError,
  defineSignal,
  Durable,
  DurableEngine,
  DurableModule,
  InvalidArgumentError,
  InvalidDefinitionError,
  InvalidOptionsError,
  Step,
  WorkflowRegistry,
  type StreamChunk,
} from 'nestjs-durable';
import { resumePosition } from '../../libs/durable/src/nest/stream-events.js';
import { EngineHarness } from '../support/engine-harness.js';

const SECRET = 'bad-input-callback-secret-of-32-bytes-at-least';
const Approval = defineSignal<{ ok: boolean }>('approval', {
  payload: (b) => {
    if (typeof (b as { ok?: unknown })?.ok !== 'boolean') throw new Error('expected { ok: boolean }');
    return b as { ok: boolean };
  },
});

/**
 * Bad input to streams, signals and callbacks: a typed error that says what to do, and nothing
 * half-written (no chunk for a refused write, no message for a refused signal or callback).
 */
describe('bad input: streams, signals and callbacks', () => {
  let h: EngineHarness;
  let e: DurableEngine;
  const LIMIT = 1_000;
  class Steps {
    @Step({ retries: 0 }) async callbackInside() {
      return Durable.callback({ timeoutMs: 1000 });
    }
  }
  const steps = new Steps();
  const collect = async (it: AsyncIterable<StreamChunk>) => {
    const out: StreamChunk[] = [];
    for await (const c of it) out.push(c);
    return out;
  };

  beforeAll(async () => {
    h = await EngineHarness.create('talk_bad_input');
    e = await h.engine(
      {
        hugeChunk: async () => Durable.stream('s').write('x'.repeat(LIMIT + 1)),
        functionChunk: async () => Durable.stream('s').write({ f: () => 1 }),
        controlName: async () => Durable.stream('a\u0001b').write(1),
        badWait: async () => Durable.waitForSignal({ name: 'x' } as never),
        negativeCallback: async () => Durable.callback({ timeoutMs: -1 }),
        missingTimeout: async () => Durable.callback({} as never),
        callbackInStep: async () => steps.callbackInside(),
        closeInStep: async () => Durable.step('closes', async () => Durable.stream('s').close(), { retries: 0 }),
        waiting: [async () => Durable.waitForSignal(Approval, { timeoutMs: 60_000 }), { signals: [Approval] }],
      },
      { maxPayloadBytes: LIMIT, callbacks: { secret: SECRET }, signals: [Approval] },
    );
  });
  afterAll(async () => {
    for (const x of h.engines) await x.stop().catch(() => {});
    await h.close();
  });

  const fails = async (workflow: string) => {
    const handle = await e.startRun(workflow, null);
    return handle.result({ timeoutMs: 10_000 }).then(
      () => {
        throw new Error(`${workflow} succeeded`);
      },
      (err: Error) => ({ id: handle.id, err }),
    );
  };
  const chunks = async (runId: string) =>
    Number((await h.query(`SELECT count(*)::int AS n FROM durable_stream_chunks WHERE run_id = $1`, [runId]))[0].n);

  it('a chunk too large or not storable fails the run with the codec error, and stores nothing', async () => {
    const huge = await fails('hugeChunk');
    expect(huge.err.message).toMatch(/PAYLOAD_TOO_LARGE|larger than|maxPayloadBytes/);
    expect(await chunks(huge.id)).toBe(0);
    const fn = await fails('functionChunk');
    expect(fn.err.message).toMatch(/function/);
    expect(await chunks(fn.id)).toBe(0);
  });

  it('stream names: empty or with control characters are refused by name', async () => {
    expect(() => Durable.stream('')).toThrow(InvalidArgumentError);
    expect(() => Durable.stream(42 as never)).toThrow(/the name must be a non-empty string/);
    const control = await fails('controlName');
    expect(control.err.message).toMatch(/control character/);
  });

  it('readers: a bad position, poll interval, name or Last-Event-ID is refused before anything is read', () => {
    expect(() => e.readStream('r', 's', { from: 1.5 })).toThrow(/from must be a position between 0 and 2147483647/);
    expect(() => e.readStream('r', 's', { from: 2 ** 31 })).toThrow(InvalidArgumentError);
    expect(() => resumePosition({ lastEventId: '2147483647' })).toThrow(InvalidArgumentError);
    expect(() => e.readStream('r', 's', { from: -1 })).toThrow(InvalidArgumentError);
    expect(() => e.readStream('r', 's', { pollMs: 5 })).toThrow(/pollMs must be between 10 and 60000/);
    expect(() => e.readStream('', 's')).toThrow(/runId/);
    expect(() => resumePosition({ lastEventId: 'abc' })).toThrow(/Last-Event-ID must be the position of a chunk/);
    expect(() => resumePosition({ lastEventId: '-1' })).toThrow(InvalidArgumentError);
    expect(resumePosition({ lastEventId: '7' })).toBe(8);
    expect(resumePosition({ lastEventId: '', from: 3 })).toBe(3);
  });

  it('an unknown run has no stream: RunNotFoundError from the first read', async () => {
    await expect(collect(e.readStream('no-such-run', 's'))).rejects.toThrow(/No run with id "no-such-run"/);
  });

  it('signals: a bad definition is refused where it is declared; a wait on something else than a signal fails the run', async () => {
    expect(() => defineSignal('')).toThrow(InvalidArgumentError);
    expect(() => defineSignal('has/slash')).toThrow(InvalidDefinitionError);
    expect(() => defineSignal('ok', { payload: 'string' as never })).toThrow(/payload must be a class or a function/);
    expect(() => defineSignal('ok', { guards: ['Guard' as never] })).toThrow(/guards must be a list of guard classes/);
    expect((await fails('badWait')).err.message).toMatch(/pass a signal made by defineSignal/);
  });

  it('a signal with a bad payload, an unknown name or to an unknown run: typed error, no message stored', async () => {
    const h2 = await e.startRun('waiting', null);
    await expect(e.sendSignal(h2.id, Approval, { ok: 'yes' })).rejects.toThrow(/not a valid payload: expected \{ ok: boolean \}/);
    await expect(e.sendSignal(h2.id, 'nope', {})).rejects.toThrow(/No signal named "nope"/);
    expect(Number((await h.query(`SELECT count(*)::int AS n FROM durable_messages WHERE run_id = $1`, [h2.id]))[0].n)).toBe(0);
    await e.cancel(h2.id);
  });

  it('callbacks: a bad timeout, a callback or close() inside a step fail the run, saying what to do', async () => {
    expect((await fails('negativeCallback')).err.message).toMatch(/timeoutMs/);
    expect((await fails('missingTimeout')).err.message).toMatch(/timeoutMs/);
    expect((await fails('callbackInStep')).err.message).toMatch(/workflow code \(not inside a step\)/);
    expect((await fails('closeInStep')).err.message).toMatch(/not inside a step/);
  });

  it('callback tokens that are not strings, too long or malformed are refused as invalid', async () => {
    for (const token of [undefined, 42, 'x'.repeat(3000), 'a.b.c.d.e', '....']) {
      await expect(e.completeCallback(token as never, {})).rejects.toBeInstanceOf(CallbackRefusedError);
    }
  });

  it('options: a short secret, a bad base URL or path, signals that are not a list or named twice', () => {
    const make = (options: object) => () => new DurableEngine({ registry: new WorkflowRegistry(), connection: h.db.url, options });
    expect(make({ callbacks: { secret: 'short' } })).toThrow(/callbacks.secret must be a string or Buffer of at least 32 bytes/);
    expect(make({ callbacks: { secret: SECRET, baseUrl: 'shop.example.com' } })).toThrow(/callbacks.baseUrl must be an http\(s\) URL/);
    expect(make({ callbacks: { secret: SECRET, path: '/a b' } })).toThrow(/callbacks.path must be a URL path/);
    expect(make({ callbacks: 'secret' })).toThrow(/callbacks must be an object/);
    expect(make({ signals: Approval })).toThrow(/signals must be a list of defineSignal\(\) results/);
    expect(make({ signals: [Approval, defineSignal('approval')] })).toThrow(/two signals are named "approval"/);
    expect(make({ signals: [{ name: 'x' }] })).toThrow(InvalidOptionsError);
  });

  it('the Nest module: a signal without guards is mounted only when asked for; bad definitions are refused', async () => {
    expect(() => defineSignal('x', { endpoint: 'yes' as never })).toThrow(/endpoint must be true or false/);
    expect(() => defineSignal('x', { decorators: ['Roles' as never] })).toThrow(/decorators must be a list of method decorators/);
    const boot = (signals: unknown[]) => () =>
      DurableModule.forRoot({ prisma: {} as never, connection: h.db.url, signals: signals as never });
    expect(boot([defineSignal('open')])).toThrow(/signal "open" has no guards: its endpoint would let anyone/);
    expect(boot([defineSignal('internal', { endpoint: false })])).not.toThrow();
    expect(boot([defineSignal('public', { unsafeNoGuard: true })])).not.toThrow();
  });

  it('the Nest module: a bad signalPath or callbackPath is refused at boot', async () => {
    for (const bad of [{ signalPath: 'a b' }, { callbackPath: '//x' }, { signals: 'approval' }, { signals: [defineSignal('open')] }]) {
      const boot = async () => {
        @Module({ imports: [DurableModule.forRoot({ prisma: {} as never, connection: h.db.url, ...(bad as object) })] })
        class BadModule {}
        await Test.createTestingModule({ imports: [BadModule] }).compile();
      };
      await expect(boot()).rejects.toBeInstanceOf(InvalidOptionsError);
    }
  });
});
