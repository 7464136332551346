import type { MessageEvent } from '@nestjs/common';
import { Observable } from 'rxjs';
import { DurableError, InvalidArgumentError } from '../errors/index.js';
import { encode } from '../codec/codec.js';
import { describeThrown } from '../errors/describe-thrown.js';
import type { ReadStreamOptions, StreamChunk } from '../engine/stream-reader.js';
import type { RunStatus } from '../store/rows.js';

export interface StreamEventsOptions {
  /**
   * The `Last-Event-ID` header of a reconnecting EventSource (the last position it got): the
   * events resume after it. Absent or empty: from `from` (default the first chunk).
   */
  lastEventId?: string | string[];
  from?: number;
  pollMs?: number;
}

/** The position to read from: after a valid Last-Event-ID, else `from`. */
export function resumePosition(opts: StreamEventsOptions): number | undefined {
  const raw = Array.isArray(opts.lastEventId) ? opts.lastEventId[0] : opts.lastEventId;
  if (raw === undefined || raw === '') return opts.from;
  if (!/^\d{1,10}$/.test(raw) || Number(raw) >= 2_147_483_647)
    throw new InvalidArgumentError(
      `streamEvents(): Last-Event-ID must be the position of a chunk this stream sent (a whole number), got ${describeThrown(raw)}.`,
      'lastEventId',
    );
  return Number(raw) + 1;
}

/**
 * A stream's chunks as Server-Sent Events for a Nest `@Sse()` route: one `message` event per chunk
 * (`id` = its position, so a reconnecting EventSource resumes with Last-Event-ID; `data` = the
 * value), then an `end` event with the run's status when the stream ends, or a `stream-error` event
 * ({ code, message }) when it cannot be read. Unsubscribing (the client went away) stops the reader.
 */
export function streamEvents<T>(
  read: (opts: ReadStreamOptions) => AsyncGenerator<StreamChunk<T>, RunStatus | null, undefined>,
  opts: StreamEventsOptions = {},
): Observable<MessageEvent> {
  const from = resumePosition(opts);
  const stop = new AbortController();
  const chunks = read({ from, pollMs: opts.pollMs, signal: stop.signal }); // bad arguments throw here, before any event
  return new Observable<MessageEvent>((subscriber) => {
    // The end and error events repeat the last chunk's id (empty before any): an EventSource that
    // reconnects after them resumes where it was, and Nest gives no id of its own to an event that has one.
    let lastId = from === undefined || from === 0 ? '' : String(from - 1);
    void (async () => {
      try {
        for (;;) {
          const next = await chunks.next();
          if (next.done) {
            if (!stop.signal.aborted) subscriber.next({ id: lastId, type: 'end', data: { status: next.value } });
            break;
          }
          lastId = String(next.value.position);
          // The data is the value's JSON as the codec writes it (Dates, BigInts, Maps… in its tagged form).
          subscriber.next({ id: String(next.value.position), data: encode(next.value.value, { where: 'a stream event' }) });
        }
      } catch (err) {
        // The library's own errors say what happened; anything else (a database error) stays on the server.
        const known = err instanceof DurableError;
        subscriber.next({
          id: lastId,
          type: 'stream-error',
          data: known ? { code: err.code, message: err.message } : { code: 'STREAM_READ_FAILED', message: 'The stream could not be read.' },
        });
      }
      subscriber.complete();
    })();
    return () => {
      stop.abort();
      void chunks.return(null).catch(() => {});
    };
  });
}
