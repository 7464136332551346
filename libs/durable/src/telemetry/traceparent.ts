/**
 * The W3C Trace Context `traceparent` header (https://www.w3.org/TR/trace-context/#traceparent-header),
 * version 00: `00-<trace id: 32 hex>-<parent span id: 16 hex>-<flags: 2 hex>`. Stored with a run, so
 * whichever instance executes it continues the trace it was started in. Written and read here rather
 * than through the API's propagator: the global propagator is a no-op until an SDK registers one.
 */

export interface TraceparentFields {
  traceId: string;
  spanId: string;
  /** 1 = sampled. */
  traceFlags: number;
}

/** Tested, not executed: no match array per parse; the fields are then cut at their fixed places. */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

export function formatTraceparent(f: TraceparentFields): string {
  return `00-${f.traceId}-${f.spanId}-${(f.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The fields of a valid version-00 traceparent; null for anything else (an all-zero id is invalid). */
export function parseTraceparent(value: string | null | undefined): TraceparentFields | null {
  if (typeof value !== 'string' || !TRACEPARENT.test(value)) return null;
  const traceId = value.slice(3, 35);
  const spanId = value.slice(36, 52);
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return { traceId, spanId, traceFlags: parseInt(value.slice(53), 16) };
}
