/**
 * Flow control's limits table (durable_queue_limits) and what the admin API shows of it, on a
 * MySQL-family database (see flow-limits.ts). A change is told to this process's workers at once
 * (SqlClient.notify, at commit); other instances read the limited queues every sweepIntervalMs, and
 * until they do, their plain claim leaves a newly limited queue alone (never past the limit).
 * Rate windows are JSON arrays of epoch ms (store/mysql/flow-claim.ts writes them).
 */
import type { LimitValues, RunBlockersRow } from '../admin-rows.js';
import { limitValues, toLimits, type KeyUsage, type QueueLimitsUsage, type QueueLimitsView } from '../admin-rows.js';
import { FLOW_LIMITS_CHANNEL } from '../sql-fragments.js';
import { iso, type Store } from '../store.js';
import { date, DUE_BY, json, marks, NOW } from './sql.js';

const LIMIT_COLUMNS = `global_concurrency, key_concurrency, rate_limit, rate_period_ms, key_rate_limit, key_rate_period_ms`;

const num = (v: unknown): number | null => (v == null ? null : Number(v));

/** A window's starts now, and when it next has room (its limit-th newest start + period; null while it has room). */
function windowState(starts: unknown, limit: number | null, periodMs: number | null, now: number): { used: number; freeAt: Date | null } {
  if (limit === null || periodMs === null) return { used: 0, freeAt: null };
  const live = (json<number[]>(starts) ?? []).filter((s) => s > now - periodMs).sort((a, b) => b - a);
  return { used: live.length, freeAt: live.length >= limit ? new Date(live[limit - 1] + periodMs) : null };
}

const notify = (store: Store, queues: string[]) => {
  for (const q of queues) store.sql.notify?.(FLOW_LIMITS_CHANNEL, q);
};

export async function setQueueLimits(store: Store, queue: string, limits: LimitValues): Promise<QueueLimitsView> {
  return store.sql.transaction(async (sql) => {
    await sql.execute(
      `INSERT INTO durable_queue_limits (queue, ${LIMIT_COLUMNS}, source, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'runtime', ${NOW})
       ON DUPLICATE KEY UPDATE global_concurrency = VALUES(global_concurrency), key_concurrency = VALUES(key_concurrency),
         rate_limit = VALUES(rate_limit), rate_period_ms = VALUES(rate_period_ms), key_rate_limit = VALUES(key_rate_limit),
         key_rate_period_ms = VALUES(key_rate_period_ms), source = 'runtime', updated_at = ${NOW}`,
      [queue, ...limitValues(limits)],
    );
    const [row] = await sql.query<Record<string, unknown>>(
      `SELECT queue, ${LIMIT_COLUMNS}, source, updated_at FROM durable_queue_limits WHERE queue = ?`,
      [queue],
    );
    notify({ ...store, sql }, [queue]);
    return toLimits(row);
  });
}

/**
 * Boot: the declared limits become the rows of their queues unless a runtime limit is set there;
 * declared rows of `queues` that no longer declare a limit are deleted. Returns the queues changed.
 */
export async function syncDeclaredLimits(
  store: Store,
  declared: Array<{ queue: string } & LimitValues>,
  queues: string[],
): Promise<string[]> {
  return store.sql.transaction(async (sql) => {
    const all = [...new Set([...declared.map((d) => d.queue), ...queues])];
    const current = new Map(
      all.length
        ? (
            await sql.query<Record<string, unknown>>(
              `SELECT queue, ${LIMIT_COLUMNS}, source FROM durable_queue_limits WHERE queue IN (${marks(all.length)}) FOR UPDATE`,
              all,
            )
          ).map((r) => [r.queue as string, r])
        : [],
    );
    const changed: string[] = [];
    for (const d of declared) {
      const row = current.get(d.queue);
      const want = limitValues(d);
      if (row && row.source !== 'declared') continue;
      const have = row ? LIMIT_COLUMNS.split(', ').map((c) => num(row[c])) : null;
      if (have && have.every((v, i) => v === want[i])) continue;
      await sql.execute(
        `INSERT INTO durable_queue_limits (queue, ${LIMIT_COLUMNS}, source, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'declared', ${NOW})
         ON DUPLICATE KEY UPDATE global_concurrency = VALUES(global_concurrency), key_concurrency = VALUES(key_concurrency),
           rate_limit = VALUES(rate_limit), rate_period_ms = VALUES(rate_period_ms), key_rate_limit = VALUES(key_rate_limit),
           key_rate_period_ms = VALUES(key_rate_period_ms), updated_at = ${NOW}`,
        [d.queue, ...want],
      );
      changed.push(d.queue);
    }
    const kept = new Set(declared.map((d) => d.queue));
    const gone = queues.filter((q) => !kept.has(q) && current.get(q)?.source === 'declared');
    if (gone.length)
      await sql.execute(`DELETE FROM durable_queue_limits WHERE source = 'declared' AND queue IN (${marks(gone.length)})`, gone);
    changed.push(...gone);
    notify({ ...store, sql }, changed);
    return changed;
  });
}

export async function deleteQueueLimits(store: Store, queue: string): Promise<boolean> {
  return store.sql.transaction(async (sql) => {
    const n = await sql.execute(`DELETE FROM durable_queue_limits WHERE queue = ?`, [queue]);
    if (n) notify({ ...store, sql }, [queue]);
    return n > 0;
  });
}

/**
 * Every limits row with its queue's executing runs, due runs (counted up to 100,000) and rate window.
 * The due counts come in a second statement, one capped count per queue: MariaDB does not let the
 * derived table that caps a count refer to the outer row.
 */
export async function listQueueLimits(store: Store): Promise<QueueLimitsUsage[]> {
  const rows = await store.sql.query<Record<string, unknown>>(
    `SELECT l.queue, ${LIMIT_COLUMNS.replace(/(\w+)/g, 'l.$1')}, l.source, l.updated_at, ${NOW} AS db_now,
       (SELECT count(*) FROM durable_runs r WHERE r.queue = l.queue AND r.status = 'RUNNING') AS running,
       (SELECT w.starts FROM durable_rate_windows w WHERE w.queue = l.queue AND w.\`key\` = '') AS starts
     FROM durable_queue_limits l ORDER BY l.queue`,
  );
  const due = new Map(
    rows.length
      ? (
          await store.sql.query<{ queue: string; n: unknown }>(
            rows
              .map(
                () => `SELECT ? AS queue, count(*) AS n FROM (SELECT 1 FROM durable_runs
                  WHERE queue = ? AND status = 'PENDING' AND available_at <= ${DUE_BY} LIMIT 100000) x`,
              )
              .join('\nUNION ALL\n'),
            rows.flatMap((r) => [r.queue, r.queue]),
          )
        ).map((d) => [d.queue, Number(d.n)])
      : [],
  );
  return rows.map((r) => {
    const w = windowState(r.starts, num(r.rate_limit), num(r.rate_period_ms), date(r.db_now)!.getTime());
    return {
      ...toLimits(r),
      running: Number(r.running),
      due: due.get(r.queue as string) ?? 0,
      rateUsed: w.used,
      rateLimitedUntil: iso(w.freeAt),
    };
  });
}

/** The busiest keys of a queue: executing and due runs per key, most executing first, with each key's rate window. */
export async function keyUsage(store: Store, queue: string, limit: number): Promise<KeyUsage[]> {
  const rows = await store.sql.query<Record<string, unknown>>(
    `SELECT u.k AS \`key\`, u.running, u.due, ${NOW} AS db_now, w.starts, l.key_rate_limit, l.key_rate_period_ms FROM (
       SELECT k, sum(running) AS running, sum(due) AS due FROM (
         SELECT concurrency_key AS k, count(*) AS running, 0 AS due FROM durable_runs
         WHERE queue = ? AND status = 'RUNNING' AND concurrency_key IS NOT NULL GROUP BY concurrency_key
         UNION ALL
         SELECT k, 0, count(*) FROM (SELECT concurrency_key AS k FROM durable_runs
           WHERE queue = ? AND status = 'PENDING' AND available_at <= ${DUE_BY} AND concurrency_key IS NOT NULL LIMIT 100000) p GROUP BY k) x
       GROUP BY k ORDER BY 2 DESC, 3 DESC, 1 LIMIT ?) u
     LEFT JOIN durable_queue_limits l ON l.queue = ?
     LEFT JOIN durable_rate_windows w ON w.queue = ? AND w.\`key\` = u.k
     ORDER BY u.running DESC, u.due DESC, u.k`,
    [queue, queue, limit, queue, queue],
  );
  return rows.map((r) => {
    const w = windowState(r.starts, num(r.key_rate_limit), num(r.key_rate_period_ms), date(r.db_now)!.getTime());
    return { key: r.key as string, running: Number(r.running), due: Number(r.due), rateUsed: w.used, rateLimitedUntil: iso(w.freeAt) };
  });
}

/** Why a run has not started: its state, its queue's limits and usage, its rate windows, its debounce. */
export async function runBlockers(store: Store, id: string): Promise<RunBlockersRow | null> {
  const [r] = await store.sql.query<Record<string, unknown>>(
    `SELECT r.status, r.queue, r.concurrency_key, r.available_at, ${NOW} AS db_now, r.available_at <= ${DUE_BY} AS due,
       ${LIMIT_COLUMNS.replace(/(\w+)/g, 'l.$1')}, r.debounce_key, r.debounce_until, r.started_at IS NULL AS never_started,
       (SELECT w.starts FROM durable_rate_windows w WHERE w.queue = r.queue AND w.\`key\` = '') AS queue_starts,
       (SELECT w.starts FROM durable_rate_windows w WHERE w.queue = r.queue AND w.\`key\` = r.concurrency_key) AS key_starts,
       (SELECT count(*) FROM durable_runs q WHERE q.queue = r.queue AND q.status = 'RUNNING') AS queue_running,
       (SELECT count(*) FROM durable_runs k WHERE k.queue = r.queue AND k.status = 'RUNNING' AND k.concurrency_key = r.concurrency_key) AS key_running
     FROM durable_runs r LEFT JOIN durable_queue_limits l ON l.queue = r.queue WHERE r.id = ?`,
    [id],
  );
  if (!r) return null;
  const now = date(r.db_now)!;
  const limits = toLimits({ ...r, source: 'runtime', updated_at: null });
  const pending = Number(r.never_started) === 1 && r.status === 'PENDING';
  return {
    status: r.status as string,
    queue: r.queue as string,
    concurrencyKey: (r.concurrency_key as string | null) ?? null,
    availableAt: date(r.available_at),
    dbNow: now,
    due: Number(r.due) === 1,
    globalConcurrency: limits.globalConcurrency,
    keyConcurrency: limits.keyConcurrency,
    rateLimit: limits.rateLimit,
    keyRateLimit: limits.keyRateLimit,
    queueRunning: Number(r.queue_running),
    keyRunning: Number(r.key_running),
    rateFreeAt: windowState(r.queue_starts, num(r.rate_limit), num(r.rate_period_ms), now.getTime()).freeAt,
    keyRateFreeAt: windowState(r.key_starts, num(r.key_rate_limit), num(r.key_rate_period_ms), now.getTime()).freeAt,
    debounceKey: pending ? ((r.debounce_key as string | null) ?? null) : null,
    debounceUntil: date(r.debounce_until),
  };
}
