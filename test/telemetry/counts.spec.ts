import * as api from '@opentelemetry/api';
import { DurableMetrics } from '../../libs/durable/src/telemetry/metrics.js';
import { MAX_COUNTED_SETS } from '../../libs/durable/src/telemetry/counts.js';
import { OtelTestSdk, type Point } from '../support/otel.js';

/**
 * The counters the engine keeps itself and reports through observable counters: several engines of
 * one process on one MeterProvider add up (as records to one synchronous counter would), values
 * are cumulative across collections, and attribute sets past the limit count as overflow.
 */
describe('telemetry: counters kept by the engine', () => {
  let sdk: OtelTestSdk;
  const noFigures = {
    figures: async () => ({ queues: [], schedulesOverdue: 0, scheduleLagSeconds: 0 }),
    activeRuns: () => new Map<string, number>(),
  };
  const logger = { log: () => {}, warn: () => {}, error: () => {} };
  const engineMetrics = () => {
    const m = new DurableMetrics();
    m.enable(api, noFigures, logger);
    return m;
  };
  const points = async (name: string): Promise<Point[]> => (await sdk.collect()).get(name) ?? [];
  const valueOf = (ps: Point[], attrs: Record<string, unknown>) =>
    ps.filter((p) => Object.entries(attrs).every(([k, v]) => p.attributes[k] === v)).reduce((a, p) => a + p.value, 0);

  beforeEach(() => (sdk = OtelTestSdk.register()));
  afterEach(() => sdk.shutdown());

  it('adds the counts of two engines on one MeterProvider, cumulatively', async () => {
    const a = engineMetrics();
    const b = engineMetrics();
    a.runsStarted('order', 'default');
    b.runsStarted('order', 'default', 2);
    b.runsStarted('ship', 'slow');
    a.runFinished('order', 'SUCCEEDED');
    b.runFinished('order', 'FAILED');
    a.stepRetried('order', 'charge');
    b.leaseLost('order');
    a.schedulesFired(3);
    a.schedulesFired(0);

    const started = await points('durable.runs.started');
    expect(valueOf(started, { 'durable.workflow': 'order', 'durable.queue': 'default' })).toBe(3);
    expect(valueOf(started, { 'durable.workflow': 'ship', 'durable.queue': 'slow' })).toBe(1);
    expect(started).toHaveLength(2); // each attribute set observed once, not once per engine
    const finished = await points('durable.runs.finished');
    expect(valueOf(finished, { 'durable.workflow': 'order', 'durable.status': 'SUCCEEDED' })).toBe(1);
    expect(valueOf(finished, { 'durable.workflow': 'order', 'durable.status': 'FAILED' })).toBe(1);
    expect(valueOf(await points('durable.step.retries'), { 'durable.step': 'charge' })).toBe(1);
    expect(valueOf(await points('durable.lease.lost'), { 'durable.workflow': 'order' })).toBe(1);
    expect(valueOf(await points('durable.schedules.fired'), {})).toBe(3);

    a.runsStarted('order', 'default');
    expect(valueOf(await points('durable.runs.started'), { 'durable.workflow': 'order' })).toBe(4);
  });

  it('starts from zero on a new MeterProvider', async () => {
    engineMetrics().runsStarted('order', 'default', 5);
    expect(valueOf(await points('durable.runs.started'), {})).toBe(5);
    await sdk.shutdown();
    sdk = OtelTestSdk.register();
    engineMetrics().runsStarted('order', 'default');
    expect(valueOf(await points('durable.runs.started'), {})).toBe(1);
  });

  it('counts attribute sets past the limit as overflow, the total unchanged', async () => {
    const m = engineMetrics();
    for (let i = 0; i < MAX_COUNTED_SETS + 10; i++) m.runsStarted(`w${i}`, 'default');
    const started = await points('durable.runs.started');
    expect(started).toHaveLength(MAX_COUNTED_SETS + 1);
    expect(valueOf(started, { 'otel.metric.overflow': true })).toBe(10);
    expect(valueOf(started, {})).toBe(MAX_COUNTED_SETS + 10);
  });
});
