import { NonRetryableError } from '../errors/index.js';

/** How a failing step is retried. Delays grow exponentially, with jitter, up to maxDelayMs. */
export interface RetryPolicy {
  /** Total attempts including the first. Default 5; 1 = no retry. */
  maxAttempts?: number;
  /** Delay before the second attempt. Default 1 000 ms (then 2, 4, 8 s: a database failover of ~10 s is ridden out). */
  initialDelayMs?: number;
  /** Growth of the delay per attempt. Default 2. */
  backoffFactor?: number;
  /** Upper bound of one delay. Default 30 000 ms. */
  maxDelayMs?: number;
  /** Return false to stop retrying this error. NonRetryableError is never retried. */
  retryIf?: (error: unknown) => boolean;
}

export type ResolvedRetryPolicy = Required<Omit<RetryPolicy, 'retryIf'>> & Pick<RetryPolicy, 'retryIf'>;

export function resolveRetryPolicy(...layers: Array<RetryPolicy | number | undefined>): ResolvedRetryPolicy {
  const r: ResolvedRetryPolicy = { maxAttempts: 5, initialDelayMs: 1_000, backoffFactor: 2, maxDelayMs: 30_000 };
  for (const l of layers) {
    if (l === undefined) continue;
    if (typeof l === 'number') r.maxAttempts = l + 1; // `retries: 2` = 2 retries after the first attempt
    else Object.assign(r, Object.fromEntries(Object.entries(l).filter(([, v]) => v !== undefined)));
  }
  return r;
}

/** Delay before attempt `attempt + 1` (attempt counts from 1): exponential, jitter in [50 %, 100 %]. */
export function backoffDelay(p: ResolvedRetryPolicy, attempt: number): number {
  const base = Math.min(p.maxDelayMs, p.initialDelayMs * p.backoffFactor ** (attempt - 1));
  return Math.round(base * (0.5 + Math.random() / 2));
}

export function shouldRetry(p: ResolvedRetryPolicy, attempt: number, error: unknown): boolean {
  if (attempt >= p.maxAttempts) return false;
  if (error instanceof NonRetryableError || (error as { name?: string } | null)?.name === 'NonRetryableError') return false;
  return p.retryIf ? p.retryIf(error) : true;
}
