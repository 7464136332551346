import { withClient } from './db.js';

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
export async function guardStall<T>(
  what: string,
  work: Promise<T>,
  progress: () => number,
  explain: () => Promise<string>,
  stallMs = STALL_MS,
): Promise<T> {
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

/** Where a peer keeps its workflows: the table, its status column values, and the error text of a failed one. */
export interface StatusSource {
  label: string;
  table: string;
  failedStatus: string;
  errorSql: string;
}

/** A peer's workflows by status, and the error of one that failed: what a stalled phase reports. */
export async function statusSummary(url: string, src: StatusSource): Promise<string> {
  return withClient(url, async (c) => {
    const { rows } = await c.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM ${src.table} GROUP BY status ORDER BY status`,
    );
    const failed = await c.query<{ error: string }>(
      `SELECT left(${src.errorSql}, 300) AS error FROM ${src.table} WHERE status = $1 LIMIT 1`,
      [src.failedStatus],
    );
    return `${src.label} by status: ${rows.map((r) => `${r.status} ${r.n}`).join(', ')}${failed.rows[0] ? `; a failed one: ${failed.rows[0].error}` : ''}`;
  });
}
