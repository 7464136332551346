/**
 * The library's one back-off rule: `initialMs × factor^(attempt − 1)`, at most `maxMs`, with an
 * optional jitter that spreads the delay over [(1 − jitter) × delay, delay]. Every retry, poll and
 * reconnect loop of the library takes its delays from here.
 */
export interface Backoff {
  initialMs: number;
  maxMs: number;
  /** Growth per attempt. Default 2. */
  factor?: number;
  /** 0 (default): exact delays; 0.5: each delay uniformly in [50 %, 100 %] of the exact one. */
  jitter?: number;
}

/** Delay before retrying after failed attempt `attempt` (counting from 1). */
export function backoffMs(b: Backoff, attempt: number): number {
  const exact = Math.min(b.maxMs, b.initialMs * (b.factor ?? 2) ** Math.max(0, attempt - 1));
  return b.jitter ? Math.round(exact * (1 - b.jitter * Math.random())) : exact;
}

/** Named back-offs of the library's loops (one place to read and tune them). */
export const BACKOFF = {
  /** A start outside the caller's transaction whose connection failed: tried once more, after this. */
  startRetry: { initialMs: 200, maxMs: 200 },
  /** A checkpoint or other fenced write whose connection failed (retried while the lease may be valid). */
  write: { initialMs: 100, maxMs: 2_000 },
  /** A database operation failing for a whole component (claims, sweeper, listener): logged once per outage. */
  outage: { initialMs: 200, maxMs: 5_000 },
  /** An execution's wait statement that failed; the run keeps its lease meanwhile. */
  waitCheck: { initialMs: 100, maxMs: 5_000 },
  /** A wait statement that made no progress where it should have (never expected; never spin on it). */
  waitStall: { initialMs: 20, maxMs: 1_000 },
  /** Polling for a run's result or an event: quick at first, then at most once a second / twice a second. */
  resultPoll: { initialMs: 10, maxMs: 1_000 },
  eventPoll: { initialMs: 10, maxMs: 500 },
} satisfies Record<string, Backoff>;
