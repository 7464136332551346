/**
 * Starts `n` runs one by one from `callers` concurrent loops, each awaiting its start before the next:
 * how an app's concurrent requests start runs (one start per request). `start(i)` starts run i.
 */
export async function oneByOne(n: number, callers: number, start: (i: number) => Promise<unknown>, onStarted?: (started: number) => void) {
  let next = 0;
  let started = 0;
  const loop = async () => {
    while (next < n) {
      await start(next++);
      onStarted?.(++started);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(callers, n)) }, loop));
}

/**
 * Runs each peer starts one by one in its warm-up, before any measured phase: V8 optimizes a code
 * path only after it ran many times, and the one-by-one path is the first phase measured, so with
 * a short warm-up its first second ran slower (about 2,000 workflows/s, then 3,100+ once warm).
 */
export const WARM_ONE_BY_ONE = 1_000;
