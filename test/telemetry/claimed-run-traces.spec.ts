import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Durable } from 'nestjs-durable';
import { EngineHarness, eventually } from '../support/engine-harness.js';
import { OtelTestSdk } from '../support/otel.js';

/**
 * A run started outside any trace is a trace of its own, whatever is active where it is claimed: the
 * claim a finished run asks for (while its end is written, inside its span) or the request of an
 * in-process start must not become its parent.
 */
describe('run spans of claimed runs without a traceparent', () => {
  let h: EngineHarness;
  let sdk: OtelTestSdk;
  beforeAll(async () => {
    sdk = OtelTestSdk.register();
    h = await EngineHarness.create('claimed_run_traces');
  });
  afterAll(async () => {
    await h.close();
    await sdk.shutdown();
  });

  it('each is the root of its own trace', async () => {
    const worker = await h.engine(
      { one: async (n: number) => Durable.step('s', async () => (await new Promise((r) => setTimeout(r, 20)), n)) },
      { concurrency: 1 },
      false,
    );
    const client = await h.engine({ one: async (n: number) => n }, { worker: false });
    await client.startMany(Array.from({ length: 6 }, (_, i) => ({ workflow: 'one', input: i, options: { id: `t-${i}` } })));
    await worker.start();
    await eventually(async () => {
      const [r] = await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE status = 'SUCCEEDED'`);
      return r.n === 6 || undefined;
    });
    await eventually(async () => sdk.spans().filter((s) => s.name === 'durable.run one').length >= 6 || undefined);
    const runs = sdk.spans().filter((s: ReadableSpan) => s.name === 'durable.run one');
    expect(runs.filter((s) => s.parentSpanContext).map((s) => s.attributes['durable.run_id'])).toEqual([]);
    await worker.stop();
  });
});

describe('claims after an in-process start made inside a request span', () => {
  let h: EngineHarness;
  let sdk: OtelTestSdk;
  beforeAll(async () => {
    sdk = OtelTestSdk.register();
    h = await EngineHarness.create('claimed_run_traces_req');
  });
  afterAll(async () => {
    await h.close();
    await sdk.shutdown();
  });

  it('runs without a traceparent claimed afterwards are not children of that request', async () => {
    const slow = async (n: number) => Durable.step('s', async () => (await new Promise((r) => setTimeout(r, 50)), n));
    const worker = await h.engine({ one: slow }, { concurrency: 1 });
    const client = await h.engine({ one: slow }, { worker: false });
    await sdk.tracer.startActiveSpan('POST /x', async (span) => {
      await worker.startRun('one', 0, { id: 'r-0' });
      span.end();
    });
    await client.startMany(Array.from({ length: 3 }, (_, i) => ({ workflow: 'one', input: i, options: { id: `q-${i}` } })));
    await eventually(async () => {
      const [r] = await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE status = 'SUCCEEDED'`);
      return r.n === 4 || undefined;
    });
    await eventually(async () => sdk.spans().filter((s) => s.name === 'durable.run one').length >= 4 || undefined);
    const runs = sdk.spans().filter((s: ReadableSpan) => s.name === 'durable.run one');
    const queued = runs.filter((s) => String(s.attributes['durable.run_id']).startsWith('q-'));
    expect(queued.filter((s) => s.parentSpanContext).map((s) => s.attributes['durable.run_id'])).toEqual([]);
    await worker.stop();
  });
});
