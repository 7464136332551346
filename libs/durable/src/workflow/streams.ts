import { checkKey } from '../config/limits.js';
import { encode } from '../codec/codec.js';
import { InvalidArgumentError, NotInWorkflowError } from '../errors/index.js';
import { writeChunk, type ChunkWrite } from '../store/streams.js';
import { durableOperation, fencedWrite } from './durable-operation.js';
import { currentScope, type RunContext } from './run-context.js';

/** Step names of stream writes from workflow code (what getRun() shows; replay checks them). */
export const streamWriteStepName = (stream: string) => `durable.stream:${stream}`;
export const streamCloseStepName = (stream: string) => `durable.stream.end:${stream}`;

/** A stream of the running workflow, as Durable.stream(name) returns it. */
export interface DurableStreamWriter<T = unknown> {
  readonly name: string;
  /**
   * Appends `value` to the stream; resolves once it is stored (readers see it then). From workflow
   * code the write is a durable operation: exactly once at its position, however often the run is
   * replayed. Inside a step a chunk is written as the step runs, and the step's n-th chunk once: an
   * attempt after a retry (or a crash) skips the chunks an earlier attempt stored — so a step should
   * write the same chunks in the same order on every attempt.
   */
  write(value: T): Promise<void>;
  /** Ends the stream (readers stop after its last chunk). Workflow code only; the run's end ends its streams too. */
  close(): Promise<void>;
}

/** What one execution knows of its streams: the write in flight per stream (writes are stored in call order) and those it closed. */
interface ExecutionStreams {
  tails: Map<string, Promise<unknown>>;
  closed: Set<string>;
}
const executions = new WeakMap<RunContext, ExecutionStreams>();
const streamsOf = (ctx: RunContext): ExecutionStreams => {
  let s = executions.get(ctx);
  if (!s) executions.set(ctx, (s = { tails: new Map(), closed: new Set() }));
  return s;
};

/** Per attempt of a step (its scope object): how many chunks it wrote, to all streams. */
const attempts = new WeakMap<object, number>();

/** The longest stream name: its steps' names (`durable.stream.end:<name>`) must fit durable_steps.name on MariaDB (200). */
export const MAX_STREAM_NAME = 180;

/** Durable.stream — see durable-api.ts. */
export function durableStream<T>(name: string): DurableStreamWriter<T> {
  checkKey('Durable.stream()', 'name', name);
  if (name.length > MAX_STREAM_NAME)
    throw new InvalidArgumentError(
      `Durable.stream(): the name must be at most ${MAX_STREAM_NAME} characters (got ${name.length}).`,
      'name',
    );
  return {
    name,
    write: (value: T) => writeValue(name, value),
    close: () => closeStream(name),
  };
}

function writeValue(stream: string, value: unknown): Promise<void> {
  const api = `Durable.stream("${stream}").write()`;
  const scope = currentScope();
  if (!scope) return Promise.reject(new NotInWorkflowError(api));
  if (scope.step) {
    // Inside a step: written now, as the n-th chunk the step writes (to any of its streams) — once: an
    // attempt after a retry or a crash stores nothing for the chunks an earlier attempt stored, and goes on after them.
    const ctx = scope.run;
    const n = attempts.get(scope.step) ?? 0;
    attempts.set(scope.step, n + 1);
    const origin = `s${scope.step.seq}.${n}`;
    try {
      if (streamsOf(ctx).closed.has(stream)) throw closedError(api, stream);
      return append(ctx, { stream, origin, value: encodeChunk(ctx, stream, value), isEnd: false, step: null });
    } catch (err) {
      return Promise.reject(err);
    }
  }
  return durableOperation(api, streamWriteStepName(stream), ({ ctx, seq, name, recorded }) => {
    if (recorded) return;
    if (streamsOf(ctx).closed.has(stream)) throw closedError(api, stream);
    return append(ctx, { stream, origin: `w${seq}`, value: encodeChunk(ctx, stream, value), isEnd: false, step: { seq, name } });
  });
}

function closeStream(stream: string): Promise<void> {
  return durableOperation(`Durable.stream("${stream}").close()`, streamCloseStepName(stream), ({ ctx, seq, name, recorded }) => {
    const s = streamsOf(ctx);
    if (s.closed.has(stream)) return;
    s.closed.add(stream);
    if (recorded) return;
    return append(ctx, { stream, origin: `w${seq}`, value: null, isEnd: true, step: { seq, name } });
  });
}

const closedError = (api: string, stream: string) =>
  new InvalidArgumentError(
    `${api}: the stream "${stream}" was closed by this run; write before close(), or use another stream name.`,
    'stream',
  );

const encodeChunk = (ctx: RunContext, stream: string, value: unknown): string =>
  encode(value, { where: `chunk of stream "${stream}" of run ${ctx.runId}`, maxBytes: ctx.services.options.maxPayloadBytes });

/** Stores a chunk after the stream's previous write of this execution (so positions follow call order), fenced. */
function append(ctx: RunContext, c: Omit<ChunkWrite, 'runId' | 'epoch'>): Promise<void> {
  const s = streamsOf(ctx);
  const previous = s.tails.get(c.stream) ?? Promise.resolve();
  const mine = previous
    .catch(() => {})
    .then(() =>
      fencedWrite(ctx, async () => ({ held: await writeChunk(ctx.services.store, { ...c, runId: ctx.runId, epoch: ctx.epoch }) })),
    )
    .then(() => ctx.services.streamWritten?.(ctx.runId));
  s.tails.set(c.stream, mine);
  return mine;
}
