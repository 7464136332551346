import * as api from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { Tracing } from './tracing.js';

const run = { id: 'r-1', workflowName: 'w', attempt: 1, epoch: 1, parentId: null };
const request = api.trace.wrapSpanContext({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: api.TraceFlags.SAMPLED });

/** The API without a tracer provider (no SDK): its tracer hands out no-op spans. */
describe('a run execution span without an SDK', () => {
  const tracing = new Tracing();
  tracing.enable(api);

  it('is none for a run with no stored trace when no span is active: the execution makes no context', () => {
    expect(tracing.startRun(run, 'default', 'w1')).toBeNull();
  });

  it('carries on a stored trace (its traceparent) as a valid no-op span', () => {
    const span = tracing.startRun({ ...run, traceparent: `00-${'c'.repeat(32)}-${'d'.repeat(16)}-01` }, 'default', 'w1');
    expect(tracing.traceparentOf(span)).toMatch(new RegExp(`^00-${'c'.repeat(32)}-`));
  });

  describe('with a context manager (propagation only, or an SDK with tracing off)', () => {
    const manager = new AsyncLocalStorageContextManager();
    beforeAll(() => api.context.setGlobalContextManager(manager.enable()));
    afterAll(() => api.context.disable());

    it("hides a span active where the run is claimed (another run's, a request's) from the run's code", () => {
      const span = api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, request), () => tracing.startRun(run, 'default', 'w1'));
      expect(span).not.toBeNull();
      const seen = api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, request), () =>
        tracing.withinRun(span, () => api.trace.getActiveSpan()?.spanContext().traceId),
      );
      expect(seen).not.toBe('a'.repeat(32));
      expect(tracing.traceparentOf(span)).toBeNull();
    });

    it('is none again where no span is active', () => {
      expect(tracing.startRun(run, 'default', 'w1')).toBeNull();
    });
  });
});
