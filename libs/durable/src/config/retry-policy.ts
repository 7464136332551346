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
    if (typeof l === 'number')
      r.maxAttempts = l + 1; // `retries: 2` = 2 retries after the first attempt
    else Object.assign(r, Object.fromEntries(Object.entries(l).filter(([, v]) => v !== undefined)));
  }
  return r;
}
