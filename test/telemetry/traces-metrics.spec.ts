import { SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { Durable, type DurableEngine } from 'nestjs-durable';
import { EngineHarness, STEADY } from '../support/engine-harness.js';
import { OtelTestSdk, type Point } from '../support/otel.js';

/**
 * Traces and metrics through the official OpenTelemetry SDK (in-memory span exporter, on-demand
 * metric reader) registered in this process; the engine only knows @opentelemetry/api.
 */
describe('telemetry: traces and metrics', () => {
  let h: EngineHarness;
  let sdk: OtelTestSdk;
  let engine: DurableEngine;
  let flaky = 0;
  const logged: string[] = [];

  beforeAll(async () => {
    sdk = OtelTestSdk.register();
    h = await EngineHarness.create('telemetry', STEADY);
    const keep = (level: string) => (m: string) => void logged.push(`${level} ${m}`);
    const logger = { log: keep('log'), warn: keep('warn'), error: keep('error'), debug: keep('debug') };
    engine = await h.engine(
      {
        order: async (input: { id: string }) => {
          const reserved = await Durable.step('reserve', async () => `r-${input.id}`);
          await Durable.step(
            'charge',
            async () => {
              if (flaky++ === 0) throw new Error('card declined once');
              return 'charged';
            },
            { retries: { maxAttempts: 3, initialDelayMs: 10 } },
          );
          const child = await Durable.startChild('ship', { reserved });
          return { shipped: await child.result() };
        },
        ship: async (input: { reserved: string }) => Durable.step('label', async () => `label-${input.reserved}`),
        waiter: async () => ({ webhook: await Durable.recv<string>('webhook'), peer: await Durable.recv<string>('peer') }),
        sender: async (input: { to: string }) => {
          await Durable.send(input.to, 'peer', 'hello from a run');
          return 'sent';
        },
        broken: async () =>
          Durable.step(
            'explode',
            async () => {
              throw new Error('kaboom');
            },
            { retries: { maxAttempts: 1 } },
          ),
      },
      { logger, logLevel: 'log' },
    );
  });
  beforeAll(() => {
    const sql = engine.storeForTools.sql as { query: (q: unknown, p?: unknown) => Promise<unknown> };
    const query = sql.query.bind(sql);
    sql.query = (q, p) => {
      if ((q as { name?: string }).name === 'durable_queue_figures') figuresCalls++;
      return query(q, p);
    };
  });
  afterAll(async () => {
    await h.close();
    await sdk.shutdown();
  });

  const spansOfRun = (runId: string) => sdk.spans().filter((s) => s.attributes['durable.run_id'] === runId);
  const byName = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);
  const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

  it('stores the starting span as traceparent; run and step spans continue its trace; the child joins it; a retry is an error span', async () => {
    let root!: { traceId: string; spanId: string };
    const handle = await sdk.tracer.startActiveSpan('POST /orders', async (span) => {
      root = span.spanContext();
      try {
        return await engine.startRun('order', { id: 'o1' });
      } finally {
        span.end();
      }
    });
    expect(await handle.result({ timeoutMs: 20_000 })).toEqual({ shipped: 'label-r-o1' });

    const [row] = await h.query(`SELECT traceparent FROM durable_runs WHERE id = $1`, [handle.id]);
    expect(row.traceparent).toBe(`00-${root.traceId}-${root.spanId}-01`);

    const runSpans = byName(spansOfRun(handle.id), 'durable.run order');
    expect(runSpans.length).toBeGreaterThanOrEqual(1); // more than one when the run suspended on the child
    for (const s of runSpans) {
      expect(s.spanContext().traceId).toBe(root.traceId);
      expect(parentOf(s)).toBe(root.spanId);
      expect(s.attributes).toMatchObject({ 'durable.workflow': 'order', 'durable.queue': 'default', 'durable.run_id': handle.id });
    }
    expect(runSpans.map((s) => s.attributes['durable.attempt'])).toEqual(runSpans.map((_, i) => i + 1));
    const last = runSpans[runSpans.length - 1];
    expect(last.status.code).toBe(SpanStatusCode.UNSET); // OK is the application's to set
    expect(last.attributes['durable.outcome']).toBe('SUCCEEDED');

    // Steps: children of the execution that ran them; the failed attempt of "charge" is an error span.
    const runSpanIds = new Set(runSpans.map((s) => s.spanContext().spanId));
    const reserve = byName(spansOfRun(handle.id), 'durable.step reserve');
    const charge = byName(spansOfRun(handle.id), 'durable.step charge');
    expect(reserve).toHaveLength(1);
    expect(charge.map((s) => s.attributes['durable.attempt'])).toEqual([1, 2]);
    for (const s of [...reserve, ...charge]) {
      expect(runSpanIds.has(parentOf(s)!)).toBe(true);
      expect(s.spanContext().traceId).toBe(root.traceId);
      expect(s.attributes).toMatchObject({ 'durable.workflow': 'order', 'durable.step.seq': expect.any(Number) });
    }
    expect(charge[0].status).toEqual({ code: SpanStatusCode.ERROR, message: 'card declined once' });
    expect(charge[0].events.map((e) => e.name)).toEqual(['exception']);
    expect(charge[0].attributes['durable.retrying']).toBe(true);
    expect(charge[1].status.code).toBe(SpanStatusCode.UNSET);

    // The child run: same trace, its execution a child of the parent's execution span.
    const childId = `${handle.id}:child:2`;
    const childRun = byName(spansOfRun(childId), 'durable.run ship');
    expect(childRun.length).toBeGreaterThanOrEqual(1);
    expect(childRun[0].spanContext().traceId).toBe(root.traceId);
    expect(runSpanIds.has(parentOf(childRun[0])!)).toBe(true);
    expect(childRun[0].attributes['durable.parent_run_id']).toBe(handle.id);
    expect(byName(spansOfRun(childId), 'durable.step label')[0].spanContext().traceId).toBe(root.traceId);
  });

  it("links the span of a recv to the span the message was sent in: an HTTP request's, or the sending run's", async () => {
    const waiter = await engine.startRun('waiter', {}); // no span active: a trace of its own
    let webhook!: { traceId: string; spanId: string };
    await sdk.tracer.startActiveSpan('POST /webhook', async (span) => {
      webhook = span.spanContext();
      try {
        await engine.send(waiter.id, 'webhook', 'hello from a request');
      } finally {
        span.end();
      }
    });
    const sender = await sdk.tracer.startActiveSpan('POST /other', async (span) => {
      try {
        return await engine.startRun('sender', { to: waiter.id });
      } finally {
        span.end();
      }
    });
    expect(await sender.result({ timeoutMs: 20_000 })).toBe('sent');
    expect(await waiter.result({ timeoutMs: 20_000 })).toEqual({ webhook: 'hello from a request', peer: 'hello from a run' });

    const stored = await h.query(`SELECT topic, traceparent FROM durable_messages WHERE run_id = $1 ORDER BY id`, [waiter.id]);
    expect(stored[0]).toEqual({ topic: 'webhook', traceparent: `00-${webhook.traceId}-${webhook.spanId}-01` });
    const senderSpans = byName(spansOfRun(sender.id), 'durable.run sender');
    expect(stored[1].traceparent).toBe(`00-${senderSpans[0].spanContext().traceId}-${senderSpans[0].spanContext().spanId}-01`);

    const waiterRun = byName(spansOfRun(waiter.id), 'durable.run waiter');
    const [fromRequest] = byName(spansOfRun(waiter.id), 'durable.recv webhook');
    const [fromRun] = byName(spansOfRun(waiter.id), 'durable.recv peer');
    for (const recv of [fromRequest, fromRun]) {
      // In the receiver's own trace, under the execution that received it; the sender's is a link.
      expect(recv.spanContext().traceId).toBe(waiterRun[0].spanContext().traceId);
      expect(waiterRun.map((s) => s.spanContext().spanId)).toContain(parentOf(recv));
      expect(recv.links).toHaveLength(1);
    }
    expect(fromRequest.attributes).toMatchObject({ 'durable.topic': 'webhook', 'durable.step.seq': 0, 'durable.workflow': 'waiter' });
    expect(fromRequest.links[0].context).toMatchObject({ traceId: webhook.traceId, spanId: webhook.spanId });
    const { traceId, spanId } = senderSpans[0].spanContext();
    expect(fromRun.links[0].context).toMatchObject({ traceId, spanId });
    expect(fromRun.links[0].context.traceId).not.toBe(waiterRun[0].spanContext().traceId);
  });

  it('log lines name the run, its workflow and the step; logLevel keeps debug out', () => {
    const retry = logged.find((l) => l.startsWith('warn ') && l.includes('"charge"'));
    expect(retry).toMatch(/^warn step "charge" \(#1\) of run \S+ \(order\) failed \(attempt 1\/3\), retrying: .*card declined once/);
    expect(logged.filter((l) => l.startsWith('debug '))).toEqual([]);
  });

  it('stores nothing when no span is active; a failed run is an error span with the exception', async () => {
    const handle = await engine.startRun('broken', {});
    await expect(handle.result({ timeoutMs: 20_000 })).rejects.toThrow('kaboom');
    const [row] = await h.query(`SELECT traceparent FROM durable_runs WHERE id = $1`, [handle.id]);
    expect(row.traceparent).toBeNull();
    const [run] = byName(spansOfRun(handle.id), 'durable.run broken');
    expect(run.parentSpanContext).toBeUndefined(); // a trace of its own
    expect(run.status.code).toBe(SpanStatusCode.ERROR);
    expect(run.events[0].attributes?.['exception.message']).toBe('kaboom');
  });

  it('counts runs and steps, measures claims, and reads queue depth and lag with one query per collection', async () => {
    // Due runs of a queue nobody serves: the depth and lag gauges see them.
    await h.query(
      `INSERT INTO durable_runs (id, workflow_name, queue, status, available_at) VALUES
         ('idle-1', 'order', 'unserved', 'PENDING', now() - interval '30 seconds'),
         ('idle-2', 'order', 'unserved', 'PENDING', now() - interval '5 seconds'),
         ('idle-3', 'order', 'unserved', 'PENDING', now() + interval '1 hour')`,
    );
    const before = await figuresStatementCalls();
    const m = await sdk.collect();
    await sdk.collect(); // a second collection within figuresMinIntervalMs reuses the first one's answer
    expect((await figuresStatementCalls()) - before).toBe(1);

    const sum = (name: string, attrs: Record<string, unknown>) =>
      (m.get(name) ?? []).filter((p) => matches(p, attrs)).reduce((a, p) => a + p.value, 0);
    expect(sum('durable.runs.started', { 'durable.workflow': 'order' })).toBe(1);
    expect(sum('durable.runs.finished', { 'durable.workflow': 'order', 'durable.status': 'SUCCEEDED' })).toBe(1);
    expect(sum('durable.runs.finished', { 'durable.workflow': 'broken', 'durable.status': 'FAILED' })).toBe(1);
    expect(sum('durable.step.retries', { 'durable.workflow': 'order', 'durable.step': 'charge' })).toBe(1);
    const charge = (m.get('durable.step.duration') ?? []).find((p) =>
      matches(p, { 'durable.step': 'charge', 'durable.status': 'SUCCEEDED' }),
    );
    expect(charge?.count).toBe(1);
    expect(charge!.value).toBeGreaterThan(0.005); // includes the retry back-off
    expect((m.get('durable.claim.duration') ?? []).some((p) => (p.count ?? 0) > 0)).toBe(true);
    expect(sum('durable.queue.depth', { 'durable.queue': 'unserved', 'durable.state': 'due' })).toBe(2);
    expect(sum('durable.queue.depth', { 'durable.queue': 'unserved', 'durable.state': 'delayed' })).toBe(1);
    expect(sum('durable.queue.oldest_due_age', { 'durable.queue': 'unserved' })).toBeGreaterThanOrEqual(29);
    expect(sum('durable.queue.oldest_due_age', { 'durable.queue': 'unserved' })).toBeLessThan(120);
    expect(m.get('durable.runs.active')?.some((p) => p.attributes['durable.queue'] === 'default')).toBe(true);
    expect(m.get('durable.schedules.overdue')?.[0].value).toBe(0);
    await h.query(`DELETE FROM durable_runs WHERE queue = 'unserved'`);
  });

  /** Figures statements the engine sent so far (counted on its SQL client). */
  let figuresCalls = 0;
  async function figuresStatementCalls(): Promise<number> {
    return figuresCalls;
  }
});

function matches(p: Point, attrs: Record<string, unknown>): boolean {
  return Object.entries(attrs).every(([k, v]) => p.attributes[k] === v);
}
