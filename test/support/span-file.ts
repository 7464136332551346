import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { context } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';

/** A span as a worker process wrote it to its span file (one JSON object per line). */
export interface FileSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  status: number;
  attributes: Record<string, unknown>;
  pid: number;
}

/**
 * Exports each span as it ends, synchronously, as one JSON line: what a process wrote before it
 * was SIGKILLed stays in the file (an in-memory exporter would die with it).
 */
class FileSpanExporter implements SpanExporter {
  constructor(private readonly file: string) {}
  export(spans: ReadableSpan[], done: (r: { code: number }) => void): void {
    for (const s of spans) {
      const line: FileSpan = {
        name: s.name,
        traceId: s.spanContext().traceId,
        spanId: s.spanContext().spanId,
        parentSpanId: s.parentSpanContext?.spanId ?? null,
        status: s.status.code,
        attributes: s.attributes,
        pid: process.pid,
      };
      appendFileSync(this.file, JSON.stringify(line) + '\n');
    }
    done({ code: 0 });
  }
  async shutdown(): Promise<void> {}
}

/** Registers the official SDK in this process with spans written to `file` (worker-main.ts, DURABLE_TEST_SPAN_FILE). */
export function registerSpanFile(file: string): void {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new FileSpanExporter(file))] }));
}

export function readSpanFile(file: string): FileSpan[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as FileSpan);
}
