/**
 * Spans of the engine: one per execution of a run (a "run attempt": the first one, a replay after a
 * suspension, a recovery on another instance), one per attempt of a step, both children of the trace
 * the run was started in (its stored traceparent). Without `@opentelemetry/api` every method is a
 * no-op; with it but without an SDK, the API's no-op tracer answers.
 */
import type { Context, Span, SpanContext, Tracer } from '@opentelemetry/api';
import type { OtelApi } from './otel-api.js';
import { describeThrown, readSafely } from '../errors/describe-thrown.js';
import { formatTraceparent, parseTraceparent } from './traceparent.js';

export const INSTRUMENTATION_NAME = 'nestjs-durable';

/** Span attribute names (also the metric attribute names, see metrics.ts). */
export const ATTR = {
  workflow: 'durable.workflow',
  runId: 'durable.run_id',
  queue: 'durable.queue',
  attempt: 'durable.attempt',
  epoch: 'durable.lease_epoch',
  worker: 'durable.worker',
  step: 'durable.step',
  seq: 'durable.step.seq',
  status: 'durable.status',
  outcome: 'durable.outcome',
  parentRunId: 'durable.parent_run_id',
  topic: 'durable.topic',
} as const;

/**
 * A span of the engine: the API's Span, kept opaque in the library's signatures so that its type
 * declarations never need `@opentelemetry/api` (an optional peer) to compile.
 */
export interface EngineSpan {
  end(): void;
}
/** Span attributes, as the engine sets them (a subset of the API's Attributes). */
export type SpanAttributes = Record<string, string | number | boolean>;
const otel = (span: EngineSpan): Span => span as unknown as Span;

/** What a run attempt's span is made of. */
export interface RunSpanInput {
  id: string;
  workflowName: string;
  attempt: number;
  epoch: number;
  parentId: string | null;
  traceparent?: string | null;
}

export class Tracing {
  private api: OtelApi | null = null;
  private tracer: Tracer | null = null;
  /** The context holding each execution's span, made once per execution (its steps' parent). */
  private readonly parents = new WeakMap<EngineSpan, Context>();

  /** Turns tracing on (the API is installed and the `traces` option is not false). @internal */
  enable(api: OtelApi): void {
    this.api = api;
    this.tracer = api.trace.getTracer(INSTRUMENTATION_NAME);
  }

  get enabled(): boolean {
    return this.tracer !== null;
  }

  /**
   * The traceparent of the span active now (e.g. the HTTP request's, around start()), or null
   * when there is none: then nothing is stored with the run. One function call without an SDK.
   */
  activeTraceparent(): string | null {
    if (!this.api) return null;
    const span = this.api.trace.getActiveSpan();
    return span ? this.traceparentOf(span) : null;
  }

  /** The traceparent naming `span` as the parent, or null for an invalid (no-op) span. */
  traceparentOf(span: EngineSpan | null): string | null {
    if (!span || !this.api) return null;
    const sc = otel(span).spanContext();
    return this.api.isSpanContextValid(sc) ? formatTraceparent(sc) : null;
  }

  /** Starts the span of one execution of a run: a child of the context it was started in (if stored). */
  startRun(run: RunSpanInput, queue: string, worker: string): EngineSpan | null {
    if (!this.tracer || !this.api) return null;
    const attributes: SpanAttributes = {
      [ATTR.workflow]: run.workflowName,
      [ATTR.runId]: run.id,
      [ATTR.queue]: queue,
      [ATTR.attempt]: run.attempt,
      [ATTR.epoch]: run.epoch,
      [ATTR.worker]: worker,
    };
    if (run.parentId) attributes[ATTR.parentRunId] = run.parentId;
    const span = this.tracer.startSpan(
      `durable.run ${run.workflowName}`,
      { kind: this.api.SpanKind.CONSUMER, attributes },
      this.storedContext(run.traceparent ?? null),
    );
    // No SDK and no stored trace: the API's no-op span, with no trace to carry on (an invalid context).
    // Without it the execution makes no context and none of its steps' or children's spans look at one;
    // but where a span is active (a claim made inside a request's or another run's context, with a
    // context manager registered) the no-op span stays, to hide it from the run's code.
    if (!this.api.isSpanContextValid(span.spanContext()) && !this.api.trace.getSpan(this.api.context.active())) {
      span.end();
      return null;
    }
    return span;
  }

  /** Starts the span of one attempt of a step, a child of its run attempt's span (arguments, not an object: nothing is allocated when tracing is off). */
  startStep(parent: EngineSpan | null, workflow: string, runId: string, step: string, seq: number, attempt: number): EngineSpan | null {
    // An unsampled (or SDK-less) run attempt records nothing below it: no span, no attribute object.
    // The step's code still runs in the attempt's context, so spans it makes stay unsampled too.
    if (!this.tracer || !this.api || !parent || !otel(parent).isRecording()) return null;
    return this.tracer.startSpan(
      `durable.step ${step}`,
      {
        kind: this.api.SpanKind.INTERNAL,
        attributes: { [ATTR.workflow]: workflow, [ATTR.runId]: runId, [ATTR.step]: step, [ATTR.seq]: seq, [ATTR.attempt]: attempt },
      },
      this.contextOf(parent),
    );
  }

  /**
   * A recv received a message: a short span under the run attempt's span, linked to the span the
   * message was sent in (its stored traceparent: an HTTP request's, or the sending run's), so a
   * trace viewer leads from the receiver to the sender's trace and back.
   */
  received(
    parent: EngineSpan | null,
    attrs: { workflow: string; runId: string; topic: string; seq: number },
    traceparent: string | null,
  ): void {
    if (!this.tracer || !this.api || !parent || !otel(parent).isRecording()) return;
    const sender = parseTraceparent(traceparent);
    const span = this.tracer.startSpan(
      `durable.recv ${attrs.topic}`,
      {
        kind: this.api.SpanKind.CONSUMER,
        attributes: { [ATTR.workflow]: attrs.workflow, [ATTR.runId]: attrs.runId, [ATTR.topic]: attrs.topic, [ATTR.seq]: attrs.seq },
        links: sender ? [{ context: { ...sender, isRemote: true } }] : undefined,
      },
      this.contextOf(parent),
    );
    span.end();
  }

  private contextOf(span: EngineSpan): Context {
    let c = this.parents.get(span);
    if (!c) this.parents.set(span, (c = this.api!.trace.setSpan(this.api!.ROOT_CONTEXT, otel(span))));
    return c;
  }

  /** Runs `fn` with `span` as the active span (spans the user's code makes become its children). */
  within<T>(span: EngineSpan | null, fn: () => T): T {
    if (!span || !this.api) return fn();
    return this.api.context.with(this.api.trace.setSpan(this.api.context.active(), otel(span)), fn);
  }

  /** Runs an execution with its run attempt's span active; that context is also its steps' parent (made once). */
  withinRun<T>(span: EngineSpan | null, fn: () => T): T {
    if (!span || !this.api) return fn();
    const c = this.api.trace.setSpan(this.api.context.active(), otel(span));
    this.parents.set(span, c);
    return this.api.context.with(c, fn);
  }

  /**
   * Ends a span that went well (with `outcome` as its durable.outcome attribute, if given). Its status
   * stays UNSET: OpenTelemetry leaves OK to the application, instrumentation only marks errors.
   * One attribute, not an attributes object: nothing is allocated per call, with tracing or without.
   */
  ok(span: EngineSpan | null, outcome?: string): void {
    if (!span) return;
    if (outcome !== undefined) otel(span).setAttribute(ATTR.outcome, outcome);
    span.end();
  }

  /** Ends a span with an error: recorded as an exception event, status ERROR; `attribute` set first. */
  failed(span: EngineSpan | null, err: unknown, attribute: string, value: string | boolean): void {
    if (!span || !this.api) return;
    otel(span).setAttribute(attribute, value);
    // Whatever was thrown: recorded by its description, which never throws (a thrown value must not end the process).
    const message = describeThrown(err);
    const name = readSafely(err, 'name');
    const stack = readSafely(err, 'stack');
    otel(span).recordException({
      name: typeof name === 'string' ? name : 'Error',
      message,
      stack: typeof stack === 'string' ? stack : undefined,
    });
    otel(span).setStatus({ code: this.api.SpanStatusCode.ERROR, message });
    span.end();
  }

  /** Ends a span neither ok nor failed (an execution that stopped: suspended, lease lost, shut down), with its outcome. */
  end(span: EngineSpan | null, outcome: string): void {
    if (!span) return;
    otel(span).setAttribute(ATTR.outcome, outcome);
    span.end();
  }

  /**
   * The context a stored traceparent names (a remote parent), or none: a run started outside any
   * trace is a trace of its own, whatever happens to be active where it is claimed (another run's
   * span, or the request of an in-process start whose end asked for the claim).
   */
  private storedContext(traceparent: string | null): Context {
    const api = this.api!;
    const f = parseTraceparent(traceparent) as SpanContext | null;
    if (!f) return api.ROOT_CONTEXT;
    f.isRemote = true;
    return api.trace.setSpanContext(api.ROOT_CONTEXT, f);
  }
}
