import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';

/** A reader the test collects from when it wants (no timer). */
class OnDemandReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

/** One data point of a collected metric: its attributes and value (a number, or a histogram's count and sum). */
export interface Point {
  attributes: Record<string, unknown>;
  value: number;
  count?: number;
}

/**
 * The official OpenTelemetry SDK registered globally in this process, with in-memory span export
 * and a metric reader collected on demand. Register it before the engines start (they take their
 * tracer and meter when they start).
 */
export class OtelTestSdk {
  readonly exporter = new InMemorySpanExporter();
  private readonly reader = new OnDemandReader();
  private readonly tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(this.exporter)] });
  private readonly meterProvider = new MeterProvider({ readers: [this.reader] });
  private readonly contextManager = new AsyncLocalStorageContextManager().enable();

  static register(): OtelTestSdk {
    const sdk = new OtelTestSdk();
    context.setGlobalContextManager(sdk.contextManager);
    trace.setGlobalTracerProvider(sdk.tracerProvider);
    metrics.setGlobalMeterProvider(sdk.meterProvider);
    return sdk;
  }

  get tracer() {
    return trace.getTracer('test');
  }

  spans(): ReadableSpan[] {
    return this.exporter.getFinishedSpans();
  }

  /** The points of every metric, by name (cumulative). */
  async collect(): Promise<Map<string, Point[]>> {
    const { resourceMetrics } = await this.reader.collect();
    const out = new Map<string, Point[]>();
    for (const scope of resourceMetrics.scopeMetrics) {
      for (const m of scope.metrics) {
        const points = (m.dataPoints as DataPoint<number | Histogram>[]).map((p) =>
          typeof p.value === 'number'
            ? { attributes: p.attributes, value: p.value }
            : { attributes: p.attributes, value: p.value.sum ?? 0, count: p.value.count },
        );
        out.set(m.descriptor.name, [...(out.get(m.descriptor.name) ?? []), ...points]);
      }
    }
    return out;
  }

  async shutdown(): Promise<void> {
    await this.tracerProvider.shutdown();
    await this.meterProvider.shutdown();
    trace.disable();
    metrics.disable();
    context.disable();
  }
}
