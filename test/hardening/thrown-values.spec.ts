import { spawnSync } from 'node:child_process';
import { Durable, type DurableEngine } from 'nestjs-durable';
import { createTestDatabase } from '../support/db.js';
import { EngineHarness } from '../support/engine-harness.js';
import { OtelTestSdk } from '../support/otel.js';
import { childArgs } from '../support/processes.js';

/** Values no code should throw, and some code does: each must fail its run, readably, and nothing else. */
function hostileValues(): Record<string, () => unknown> {
  return {
    nullPrototype: () => Object.create(null),
    throwingToString: () => ({
      toString() {
        throw new Error('toString says no');
      },
      toJSON() {
        throw new Error('toJSON says no');
      },
    }),
    throwingMessage: () =>
      Object.defineProperty(new Error('x'), 'message', {
        get() {
          throw new Error('message getter says no');
        },
      }),
    throwingStack: () =>
      Object.defineProperty(new Error('stackless'), 'stack', {
        get() {
          throw new Error('stack getter says no');
        },
      }),
    revokedProxy: () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    },
    symbol: () => Symbol('thrown'),
    null: () => null,
    undefined: () => undefined,
    number: () => 42,
    circular: () => {
      const o: Record<string, unknown> = { name: 'loop' };
      o.self = o;
      return o;
    },
  };
}

describe('a thrown value of any kind fails its run and never the process (tracing on)', () => {
  let h: EngineHarness;
  let engine: DurableEngine;
  const crashes: unknown[] = [];
  const onCrash = (err: unknown) => void crashes.push(err);

  beforeAll(async () => {
    process.on('uncaughtException', onCrash);
    process.on('unhandledRejection', onCrash);
    OtelTestSdk.register();
    h = await EngineHarness.create('thrown_values');
    const workflows: Record<string, (input: { kind: string }) => Promise<unknown>> = {
      fromStep: async ({ kind }) =>
        Durable.step(
          'throws',
          async () => {
            throw hostileValues()[kind]();
          },
          { retries: { maxAttempts: 2, initialDelayMs: 1 } },
        ),
      fromWorkflow: async ({ kind }) => {
        await Durable.step('fine', async () => 'ok');
        throw hostileValues()[kind]();
      },
      fromCompensation: async ({ kind }) => {
        await Durable.step('reserve', async () => 'r', {
          compensate: async () => {
            throw hostileValues()[kind]();
          },
        });
        throw new Error('fail so the compensation runs');
      },
    };
    const quiet = { log: () => {}, warn: () => {}, error: () => {}, debug: () => {} };
    engine = await h.engine(workflows, { logger: quiet, logLevel: 'log' });
  });
  afterAll(async () => {
    process.off('uncaughtException', onCrash);
    process.off('unhandledRejection', onCrash);
    await h?.close();
  });

  it('each kind, thrown from a step, a workflow body and a compensation, FAILS its run with a readable error', async () => {
    const kinds = Object.keys(hostileValues());
    const started = await Promise.all(
      kinds.flatMap((kind) =>
        ['fromStep', 'fromWorkflow', 'fromCompensation'].map(async (workflow) => ({
          kind,
          workflow,
          handle: await engine.startRun(workflow, { kind }),
        })),
      ),
    );
    const outcomes = await Promise.all(
      started.map(async ({ kind, workflow, handle }) => {
        await handle.result({ timeoutMs: 30_000 }).catch(() => {});
        const run = await engine.getRun(handle.id);
        const error = (run?.error ?? {}) as { name?: unknown; message?: unknown };
        const readable = typeof error.name === 'string' && typeof error.message === 'string' && error.message.length > 0;
        return { kind, workflow, status: run?.status, readable };
      }),
    );
    expect(outcomes).toEqual(started.map(({ kind, workflow }) => ({ kind, workflow, status: 'FAILED', readable: true })));
    expect(crashes).toEqual([]);
  });
});

describe('a process whose workflows throw unconvertible values (tracing on)', () => {
  it('keeps running: the runs fail, the process exits 0 when it is done', async () => {
    const db = await createTestDatabase('thrown_process');
    try {
      const r = spawnSync(process.execPath, await childArgs('test/hardening/thrown-value-main.ts'), {
        env: { ...process.env, NODE_OPTIONS: '', DATABASE_URL: db.url },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
      expect(r.stdout).toMatch(/^nullPrototypeFromStep FAILED: A value that cannot be inspected was thrown: \{\}$/m);
      expect(r.stdout).toMatch(
        /^revokedProxyFromWorkflow FAILED: A value that cannot be inspected was thrown: a value that cannot be read/m,
      );
    } finally {
      await db.drop();
    }
  });
});
