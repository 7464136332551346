// OpenTelemetry for the example shop, with the official SDK: spans kept in memory (or printed to
// the console) and metrics served to Prometheus at GET /metrics. Registered in main.ts before the
// app is created: the library takes its tracer and meter from the global API when it starts.
import { context, metrics, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  ConsoleSpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/** OTEL_TRACES: `memory` (default: the latest spans, at GET /traces/:traceId), `console`, or `off`. */
export type TraceExport = 'memory' | 'console' | 'off';

/** How many finished spans the memory exporter keeps (the oldest go first). */
const MEMORY_SPANS = 5_000;

export interface ExampleTelemetry {
  /** Prometheus text of every metric (the library's durable_* ones included). */
  prometheus: PrometheusExporter;
  /** Finished spans kept in memory (mode `memory`), oldest first. */
  spans(): ReadableSpan[];
  shutdown(): Promise<void>;
}

let current: ExampleTelemetry | null = null;

/** Keeps the latest MEMORY_SPANS finished spans (the SDK's InMemorySpanExporter keeps every one). */
class LatestSpans implements SpanExporter {
  private kept: ReadableSpan[] = [];
  export(spans: ReadableSpan[], done: (r: { code: number }) => void): void {
    this.kept.push(...spans);
    if (this.kept.length > MEMORY_SPANS) this.kept = this.kept.slice(-MEMORY_SPANS);
    done({ code: 0 });
  }
  spans(): ReadableSpan[] {
    return this.kept;
  }
  async shutdown(): Promise<void> {
    this.kept = [];
  }
}

/** The telemetry main.ts started, or null (e.g. in tests that create the app without it). */
export const exampleTelemetry = (): ExampleTelemetry | null => current;

export function startTelemetry(mode: TraceExport = 'memory'): ExampleTelemetry {
  if (current) return current;
  const memory = new LatestSpans();
  const processors: SpanProcessor[] =
    mode === 'memory' ? [new SimpleSpanProcessor(memory)] : mode === 'console' ? [new SimpleSpanProcessor(new ConsoleSpanExporter())] : [];
  const tracerProvider = new BasicTracerProvider({ spanProcessors: processors });
  // No server of its own: the app serves its text at GET /metrics (telemetry.controller.ts).
  const prometheus = new PrometheusExporter({ preventServerStart: true });
  const meterProvider = new MeterProvider({ readers: [prometheus] });
  // AsyncLocalStorage-based, as @opentelemetry/sdk-node's NodeSDK registers by default.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  current = {
    prometheus,
    spans: () => memory.spans(),
    async shutdown() {
      await tracerProvider.shutdown();
      await meterProvider.shutdown();
      trace.disable();
      metrics.disable();
      context.disable();
      current = null;
    },
  };
  return current;
}

/** A SERVER span per HTTP request, active while Nest handles it: a run started there stores it as its parent. */
export function httpSpans(
  req: { method: string; path: string; route?: { path?: string } },
  res: { statusCode: number; on(e: 'finish' | 'close', f: () => void): void },
  next: () => void,
): void {
  trace.getTracer('example-shop').startActiveSpan(`${req.method} ${req.path}`, { kind: 1 /* SERVER */ }, (span: Span) => {
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      if (req.route?.path) span.updateName(`${req.method} ${req.route.path}`);
      span.setAttributes({ 'http.request.method': req.method, 'http.response.status_code': res.statusCode, 'url.path': req.path });
      if (res.statusCode >= 500) span.setStatus({ code: 2 });
      span.end();
    };
    res.on('finish', end);
    res.on('close', end);
    next();
  });
}

/** The spans of one trace as an indented tree: name, duration, and the durable attributes. */
export function traceTree(spans: ReadableSpan[], traceId: string): string {
  const mine = spans.filter((s) => s.spanContext().traceId === traceId);
  const ids = new Set(mine.map((s) => s.spanContext().spanId));
  const children = new Map<string | undefined, ReadableSpan[]>();
  for (const s of mine) {
    const parent = s.parentSpanContext?.spanId;
    const key = parent && ids.has(parent) ? parent : undefined;
    children.set(key, [...(children.get(key) ?? []), s]);
  }
  const ms = (s: ReadableSpan) => s.duration[0] * 1e3 + s.duration[1] / 1e6;
  const startOf = (s: ReadableSpan) => s.startTime[0] * 1e3 + s.startTime[1] / 1e6;
  const lines: string[] = [];
  const t0 = Math.min(...mine.map(startOf));
  const walk = (parent: string | undefined, depth: number) => {
    for (const s of (children.get(parent) ?? []).sort((a, b) => startOf(a) - startOf(b))) {
      const a = s.attributes;
      const facts = [
        a['durable.run_id'] && !a['durable.step'] ? `run ${String(a['durable.run_id'])}` : null,
        a['durable.attempt'] !== undefined ? `attempt ${String(a['durable.attempt'])}` : null,
        a['durable.outcome'] ? String(a['durable.outcome']) : null,
        s.status.code === 2 ? `ERROR ${s.status.message ?? ''}`.trim() : null,
      ].filter(Boolean);
      const at = `+${(startOf(s) - t0).toFixed(0)} ms`.padStart(10);
      lines.push(`${at} ${'  '.repeat(depth)}${s.name}  ${ms(s).toFixed(1)} ms${facts.length ? `  (${facts.join(', ')})` : ''}`);
      walk(s.spanContext().spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return lines.join('\n') + '\n';
}
