import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Durable, DurableEngine, WorkflowRegistry } from 'nestjs-durable';
import { STEADY } from '../support/engine-harness.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';
import { OtelTestSdk, type Point } from '../support/otel.js';

/**
 * Traces and metrics on every database the engine supports (the official OpenTelemetry SDK,
 * in-memory export, metrics collected on demand): the same spans, trace context and figures. Each
 * database's engine has workflows and queues of its own name, so the shared SDK tells them apart.
 */
let sdk: OtelTestSdk;
beforeAll(() => {
  sdk = OtelTestSdk.register();
});
afterAll(() => sdk.shutdown());

const matches = (p: Point, attrs: Record<string, unknown>) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v);

describe.each(DATABASES)('telemetry on %s', (kind) => {
  let db: KindDatabase;
  let engine: DurableEngine;
  const order = `order-${kind}`;
  const unserved = `unserved-${kind}`;
  let declined = 0;
  /** A time `s` seconds from the database's now (negative: in the past), in each dialect. */
  const fromNow = (s: number) => (kind === 'postgres' ? `now() + interval '${s} seconds'` : `UTC_TIMESTAMP(3) + INTERVAL ${s} SECOND`);

  beforeAll(async () => {
    db = await openDatabase(kind, `telemetry_${kind}`);
    const registry = new WorkflowRegistry();
    registry.register({
      name: order,
      queue: 'default',
      options: {},
      run: async (input: any) => {
        const reserved = await Durable.step('reserve', async () => `r-${input.id}`);
        await Durable.step(
          'charge',
          async () => {
            if (declined++ === 0) throw new Error('card declined once');
            return 'charged';
          },
          { retries: { maxAttempts: 3, initialDelayMs: 10 } },
        );
        return reserved;
      },
    });
    engine = new DurableEngine({ registry, connection: db.url, prisma: db.prisma, options: { ...STEADY } });
    await engine.start();
  });
  afterAll(async () => {
    await engine.stop();
    await db.close();
  });

  it('continues the starting span: run and step spans in its trace, a retried step an error span', async () => {
    let root!: { traceId: string; spanId: string };
    const handle = await sdk.tracer.startActiveSpan('POST /orders', async (span) => {
      root = span.spanContext();
      try {
        return await engine.startRun(order, { id: 'o1' });
      } finally {
        span.end();
      }
    });
    expect(await handle.result({ timeoutMs: 20_000 })).toBe('r-o1');
    const [row] = await db.query<{ traceparent: string }>('SELECT traceparent FROM durable_runs WHERE id = ?', [handle.id]);
    expect(row.traceparent).toBe(`00-${root.traceId}-${root.spanId}-01`);

    const spans = sdk.spans().filter((s) => s.attributes['durable.run_id'] === handle.id);
    const named = (name: string) => spans.filter((s: ReadableSpan) => s.name === name);
    const [run] = named(`durable.run ${order}`);
    expect(run.spanContext().traceId).toBe(root.traceId);
    expect(run.parentSpanContext?.spanId).toBe(root.spanId);
    expect(run.attributes['durable.outcome']).toBe('SUCCEEDED');
    const charge = named('durable.step charge');
    expect(charge.map((s) => s.attributes['durable.attempt'])).toEqual([1, 2]);
    expect(charge[0].status.message).toBe('card declined once');
    for (const s of [...named('durable.step reserve'), ...charge]) {
      expect(s.spanContext().traceId).toBe(root.traceId);
      expect(s.parentSpanContext?.spanId).toBe(run.spanContext().spanId);
    }
  });

  it("counts runs, steps and retries, and reads a queue's depth and the age of its oldest due run", async () => {
    await db.query(
      `INSERT INTO durable_runs (id, workflow_name, queue, status, available_at) VALUES
         ('idle-1', ?, ?, 'PENDING', ${fromNow(-30)}), ('idle-2', ?, ?, 'PENDING', ${fromNow(-5)}), ('idle-3', ?, ?, 'PENDING', ${fromNow(3600)})`,
      [order, unserved, order, unserved, order, unserved],
    );
    const m = await sdk.collect();
    const sum = (name: string, attrs: Record<string, unknown>) =>
      (m.get(name) ?? []).filter((p) => matches(p, attrs)).reduce((a, p) => a + p.value, 0);
    expect(sum('durable.runs.started', { 'durable.workflow': order })).toBe(1);
    expect(sum('durable.runs.finished', { 'durable.workflow': order, 'durable.status': 'SUCCEEDED' })).toBe(1);
    expect(sum('durable.step.retries', { 'durable.workflow': order, 'durable.step': 'charge' })).toBe(1);
    expect(sum('durable.queue.depth', { 'durable.queue': unserved, 'durable.state': 'due' })).toBe(2);
    expect(sum('durable.queue.depth', { 'durable.queue': unserved, 'durable.state': 'delayed' })).toBe(1);
    expect(sum('durable.queue.oldest_due_age', { 'durable.queue': unserved })).toBeGreaterThanOrEqual(29);
    expect(sum('durable.queue.oldest_due_age', { 'durable.queue': unserved })).toBeLessThan(120);
    await db.query('DELETE FROM durable_runs WHERE queue = ?', [unserved]);
  });
});
