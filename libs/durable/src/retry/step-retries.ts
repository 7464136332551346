import { NonRetryableError } from '../errors/index.js';
import type { ResolvedRetryPolicy } from '../config/retry-policy.js';
import { backoffMs } from './backoff.js';

/** Delay before attempt `attempt + 1` of a step (attempt counts from 1): exponential, jitter in [50 %, 100 %]. */
export function stepRetryDelay(p: ResolvedRetryPolicy, attempt: number): number {
  return backoffMs({ initialMs: p.initialDelayMs, factor: p.backoffFactor, maxMs: p.maxDelayMs, jitter: 0.5 }, attempt);
}

/** Whether a step that failed its attempt `attempt` with `error` is tried again. */
export function shouldRetry(p: ResolvedRetryPolicy, attempt: number, error: unknown): boolean {
  if (attempt >= p.maxAttempts) return false;
  if (error instanceof NonRetryableError || (error as { name?: string } | null)?.name === 'NonRetryableError') return false;
  return p.retryIf ? p.retryIf(error) : true;
}
