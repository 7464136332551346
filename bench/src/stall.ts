/**
 * Keeps a benchmark phase from waiting forever: a workflow that fails (a peer's step ran out of
 * connections, a bug) never signals completion, so every wait for "N done" goes through here.
 */

/** Default: a phase that finishes nothing for this long has stalled. */
export const STALL_MS = 60_000;

/**
 * Resolves as `work` does, or rejects once `progress()` has not changed for `stallMs`, with
 * what `explain()` reports (e.g. the peer's runs by status) so the cause is visible.
 */
export async function guardStall<T>(what: string, work: Promise<T>, progress: () => number, explain: () => Promise<string>, stallMs = STALL_MS): Promise<T> {
  let last = progress();
  let lastChange = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setInterval(() => {
      const now = progress();
      if (now !== last) {
        last = now;
        lastChange = Date.now();
        return;
      }
      if (Date.now() - lastChange < stallMs) return;
      clearInterval(timer);
      explain()
        .catch((err: Error) => `(could not read the state: ${err.message})`)
        .then((state) => reject(new Error(`${what}: no progress for ${Math.round(stallMs / 1000)} s at ${now} done; ${state}`)));
    }, 1_000);
  });
  try {
    return await Promise.race([work, stalled]);
  } finally {
    clearInterval(timer);
  }
}

/** Connections of the pool each worker process's steps use with --db-write (both peers): like an app's Prisma pool, bounded. */
export const writePoolSize = (concurrency: number) => Math.min(concurrency, 10);
