import { checkKey } from '../config/limits.js';
import { decode } from '../codec/codec.js';
import { InvalidArgumentError, RunNotFoundError } from '../errors/index.js';
import { readChunks } from '../store/streams.js';
import { FINISHED_STATUSES, type RunStatus } from '../store/rows.js';
import type { Store } from '../store/store.js';
import type { LocalResults } from './local-results.js';

/** One chunk of a run's stream, as readers get it. */
export interface StreamChunk<T = unknown> {
  /** Its place in the stream (0, 1, 2…): resume after it with `from: position + 1` (the SSE event id). */
  position: number;
  value: T;
}

export interface ReadStreamOptions {
  /** The first position to read (default 0: the whole stream). */
  from?: number;
  /** Stops the reader (the iterator ends). */
  signal?: AbortSignal;
  /** Without a hint from the writer, how often to look for new chunks (default 250 ms; PostgreSQL readers in a worker process are told at once). */
  pollMs?: number;
}

/** How the reader learns of new chunks: waits that end when a chunk of the run is written (or after ms). */
export interface StreamReadBackend {
  store: Store;
  waits: LocalResults;
}

const PAGE = 500;
/** The largest position a stream can have (an int column). */
export const MAX_POSITION = 2_147_483_647;

/** Checks a reader's arguments; InvalidArgumentError naming the API otherwise. */
export function checkReadStream(api: string, runId: unknown, stream: unknown, opts: ReadStreamOptions): number {
  checkKey(api, 'runId', runId);
  checkKey(api, 'stream name', stream);
  const from = opts.from ?? 0;
  if (!Number.isSafeInteger(from) || from < 0 || from > MAX_POSITION)
    throw new InvalidArgumentError(
      `${api}: from must be a position between 0 and ${MAX_POSITION} (an integer; got ${JSON.stringify(opts.from)}).`,
      'from',
    );
  if (opts.pollMs !== undefined && !(Number.isFinite(opts.pollMs) && opts.pollMs >= 10 && opts.pollMs <= 60_000))
    throw new InvalidArgumentError(`${api}: pollMs must be between 10 and 60000 ms (got ${JSON.stringify(opts.pollMs)}).`, 'pollMs');
  return from;
}

/**
 * The chunks of stream `stream` of run `runId` from `opts.from`, in order, live: the iterator waits
 * for new chunks and ends after the stream's end marker, or once the run ended and every chunk it
 * wrote was read (a run that failed or was cancelled ends its streams too), or when `signal` aborts.
 * RunNotFoundError when the run does not exist.
 */
export function readStream<T>(
  backend: StreamReadBackend,
  runId: string,
  stream: string,
  opts: ReadStreamOptions = {},
  api = 'readStream()',
): AsyncGenerator<StreamChunk<T>, RunStatus | null, undefined> {
  const from = checkReadStream(api, runId, stream, opts); // at the call, not at the first next()
  return chunks<T>(backend, runId, stream, from, opts);
}

async function* chunks<T>(
  backend: StreamReadBackend,
  runId: string,
  stream: string,
  from: number,
  opts: ReadStreamOptions,
): AsyncGenerator<StreamChunk<T>, RunStatus | null, undefined> {
  let next = from;
  const pollMs = opts.pollMs ?? 250;
  let seen = false;
  for (;;) {
    if (opts.signal?.aborted) return null;
    const page = await readChunks(backend.store, runId, stream, next, PAGE);
    if (page.status === null) {
      if (!seen) throw new RunNotFoundError(runId);
      return null; // deleted while being read (retention)
    }
    seen = true;
    for (const c of page.chunks) {
      if (c.isEnd) return page.status;
      next = c.position + 1;
      yield { position: c.position, value: decode(c.value) as T };
      if (opts.signal?.aborted) return null;
    }
    if (page.chunks.length === PAGE) continue;
    if (FINISHED_STATUSES.has(page.status) || page.closed) return page.status;
    await untilNextLook(backend, runId, pollMs, opts.signal);
  }
}

/** Waits for a hint that the run wrote a chunk, `pollMs`, or the reader's signal — whichever is first. */
async function untilNextLook(backend: StreamReadBackend, runId: string, pollMs: number, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return void (await backend.waits.wait(runId, pollMs));
  let onAbort: () => void = () => {};
  const aborted = new Promise<void>((resolve) => {
    onAbort = resolve;
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    await Promise.race([backend.waits.wait(runId, pollMs), aborted]);
  } finally {
    // One listener per look: a reader that waits long would otherwise pile them up on its signal.
    signal.removeEventListener('abort', onAbort);
  }
}
