/**
 * The claim of a queue with cluster-wide limits on a MySQL-family database (see flow-claim.ts, whose
 * comments are the specification). One short transaction:
 * 1. the queue's limits row, locked FOR UPDATE: claims of a limited queue take turns across every
 *    instance, and under READ COMMITTED each later statement reads a snapshot taken after the lock,
 *    in which every earlier claim of the queue has committed (its counts are exact). A stalled
 *    process cannot hold the lock past a third of the lease: the session's idle_transaction_timeout,
 *    set for the claim and put back at its end;
 * 2. the claim's clock (never earlier than the queue window's last start) and the queue's window;
 *    the RUNNING runs per key: what the limits leave (room);
 * 3. the keys with PENDING runs, in key order after the round-robin cursor and wrapping around, at
 *    most room + (keys at their limit) + 1 (one read of durable_runs_running_idx per direction);
 * 4. the candidates in one statement, each part FOR UPDATE SKIP LOCKED: each key's first due runs in
 *    claim order up to its free slots, the head of the queue (runs without a key), woken WAITING runs;
 * 5. ranked as the PostgreSQL statement ranks them (priority, round, key position), within each key's
 *    limit and rate window; the cursor moved; the starts appended to the rate windows (JSON arrays of
 *    epoch ms, each kept to its newest `limit` starts within its period); the runs leased.
 */
import { claimIdleLimitMs } from '../leases.js';
import type { SqlClient } from '../sql-client.js';
import type { Store } from '../store.js';
import type { ClaimedRun, ClaimRequest } from '../rows.js';
import { claim, leaseChosen } from './leases.js';
import { date, DUE_BY, json, marks, mysqlErrno, utc } from './sql.js';

/** See WINDOW in flow-claim.ts. */
const WINDOW = 4;

interface Limits {
  global_concurrency: number | null;
  key_concurrency: number | null;
  rr_key: string | null;
  rate_limit: number | null;
  rate_period_ms: number | null;
  key_rate_limit: number | null;
  key_rate_period_ms: number | null;
}

interface Candidate {
  id: string;
  status: 'PENDING' | 'WAITING';
  priority: number;
  order_at: unknown;
  available_at: unknown;
  concurrency_key: string | null;
  pos: number;
}

const num = (v: unknown): number | null => (v == null ? null : Number(v));
const ms = (v: unknown) => date(v)!.getTime();

/** The starts of a window (epoch ms, ascending) that count at `at`. */
const inWindow = (starts: number[], at: number, periodMs: number) => starts.filter((s) => s > at - periodMs);

/**
 * Sets the session's idle-in-transaction limit (MariaDB's variable, in whole seconds) for the claim and
 * returns what puts the session's own value back: MariaDB has no transaction-local SET, and the
 * connection may next carry other work (through Prisma, an app's transaction). A server without the
 * variable (MySQL) is left as it is.
 */
async function guardStall(sql: SqlClient, leaseMs: number): Promise<() => Promise<void>> {
  try {
    await sql.execute(`SET @durable_idle_was = @@SESSION.idle_transaction_timeout, SESSION idle_transaction_timeout = ?`, [
      Math.max(1, Math.ceil(claimIdleLimitMs(leaseMs) / 1000)),
    ]);
  } catch (err) {
    if (mysqlErrno(err) !== 1193) throw err; // 1193: unknown system variable (MySQL)
    return async () => {};
  }
  return async () => void (await sql.execute(`SET SESSION idle_transaction_timeout = @durable_idle_was`));
}

export async function claimLimited(store: Store, request: ClaimRequest): Promise<{ runs: ClaimedRun[]; limited: boolean }> {
  const { leaseMs, versions = null } = request;
  return store.sql.transaction(async (sql) => {
    const tx: Store = { ...store, sql };
    const restore = await guardStall(sql, leaseMs);
    try {
      return await claimUnderLock(tx, request, versions);
    } finally {
      await restore().catch(() => {}); // a connection lost meanwhile is not reused
    }
  });
}

async function claimUnderLock(
  tx: Store,
  request: ClaimRequest,
  versions: string[] | null,
): Promise<{ runs: ClaimedRun[]; limited: boolean }> {
  const { queue, limit, workflows } = request;
  const sql = tx.sql;
  const [raw] = await sql.query<Record<string, unknown>>(
    `SELECT global_concurrency, key_concurrency, rr_key, rate_limit, rate_period_ms, key_rate_limit, key_rate_period_ms
       FROM durable_queue_limits WHERE queue = ? FOR UPDATE`,
    [queue],
  );
  const l: Limits | null = raw
    ? {
        global_concurrency: num(raw.global_concurrency),
        key_concurrency: num(raw.key_concurrency),
        rr_key: (raw.rr_key as string | null) ?? null,
        rate_limit: num(raw.rate_limit),
        rate_period_ms: num(raw.rate_period_ms),
        key_rate_limit: num(raw.key_rate_limit),
        key_rate_period_ms: num(raw.key_rate_period_ms),
      }
    : null;
  if (!l || (l.global_concurrency === null && l.key_concurrency === null && l.rate_limit === null && l.key_rate_limit === null)) {
    return { runs: await claim(tx, request), limited: false };
  }
  if (!workflows.length || limit < 1) return { runs: [], limited: true };
  return { runs: await claimWithin(sql, tx.history, l, request, versions), limited: true };
}

async function claimWithin(sql: SqlClient, history: boolean, l: Limits, r: ClaimRequest, versions: string[] | null): Promise<ClaimedRun[]> {
  const { queue, limit, owner, leaseMs, workflows } = r;
  const [clock] = await sql.query<Record<string, unknown>>(
    `SELECT UTC_TIMESTAMP(3) AS now, w.starts, w.last_start_at FROM (SELECT 1 AS one) o
     LEFT JOIN durable_rate_windows w ON w.queue = ? AND w.\`key\` = ''`,
    [queue],
  );
  const at = Math.max(ms(clock.now), clock.last_start_at == null ? 0 : ms(clock.last_start_at));
  const queueStarts = json<number[]>(clock.starts) ?? [];
  const running = new Map<string | null, number>(
    (
      await sql.query<{ k: string | null; n: unknown }>(
        `SELECT concurrency_key AS k, count(*) AS n FROM durable_runs WHERE queue = ? AND status = 'RUNNING' GROUP BY concurrency_key`,
        [queue],
      )
    ).map((x) => [x.k, Number(x.n)]),
  );
  const runningTotal = [...running.values()].reduce((a, b) => a + b, 0);
  let room = l.global_concurrency === null ? limit : Math.max(0, Math.min(limit, l.global_concurrency - runningTotal));
  if (l.rate_limit !== null) room = Math.max(0, Math.min(room, l.rate_limit - inWindow(queueStarts, at, l.rate_period_ms!).length));
  if (room === 0) return [];
  const keyLimit = l.key_concurrency;
  const full = new Set([...running].filter(([k, n]) => k !== null && keyLimit !== null && n >= keyLimit).map(([k]) => k as string));
  const budget = room + full.size + 1;

  // 3. keys in turn after the cursor, wrapping around
  const keysFrom = async (cond: string, params: unknown[], n: number) =>
    (
      await sql.query<{ k: string }>(
        `SELECT DISTINCT concurrency_key AS k FROM durable_runs FORCE INDEX (durable_runs_running_idx)
         WHERE queue = ? AND status = 'PENDING' AND concurrency_key IS NOT NULL AND ${cond} ORDER BY concurrency_key LIMIT ?`,
        [queue, ...params, n],
      )
    ).map((x) => x.k);
  const scanned = await keysFrom('concurrency_key > ?', [l.rr_key ?? ''], budget);
  if (l.rr_key !== null && scanned.length < budget) {
    for (const k of await keysFrom('concurrency_key <= ?', [l.rr_key], budget - scanned.length)) if (!scanned.includes(k)) scanned.push(k);
  }

  // 4. the candidates, one statement
  const versionTest = versions ? ` AND (app_version IS NULL OR app_version IN (${marks(versions.length)}))` : '';
  const filter = [...workflows, ...(versions ?? [])];
  const due = `available_at <= ${DUE_BY} AND workflow_name IN (${marks(workflows.length)})${versionTest}`;
  const cols = 'id, status, priority, order_at, available_at, concurrency_key';
  const parts: string[] = [];
  const params: unknown[] = [];
  scanned.forEach((k, i) => {
    if (full.has(k)) return;
    const free = keyLimit === null ? room : Math.max(0, Math.min(room, keyLimit - (running.get(k) ?? 0)));
    if (free === 0) return;
    parts.push(`(SELECT ${cols}, ${i + 1} AS pos FROM durable_runs FORCE INDEX (durable_runs_running_idx)
      WHERE queue = ? AND status = 'PENDING' AND concurrency_key = ? AND ${due}
      ORDER BY priority, order_at, available_at LIMIT ? FOR UPDATE SKIP LOCKED)`);
    params.push(queue, k, ...filter, free);
  });
  parts.push(`(SELECT ${cols}, 0 AS pos FROM durable_runs FORCE INDEX (durable_runs_claim_idx)
    WHERE queue = ? AND status = 'PENDING' AND ${due} ORDER BY priority, order_at, available_at LIMIT ? FOR UPDATE SKIP LOCKED)`);
  params.push(queue, ...filter, room * WINDOW);
  const fullKeys = [...full];
  parts.push(`(SELECT ${cols}, 0 AS pos FROM durable_runs FORCE INDEX (durable_runs_wake_idx)
    WHERE queue = ? AND status = 'WAITING' AND ${due}${fullKeys.length ? ` AND (concurrency_key IS NULL OR concurrency_key NOT IN (${marks(fullKeys.length)}))` : ''}
    ORDER BY available_at LIMIT ? FOR UPDATE SKIP LOCKED)`);
  params.push(queue, ...filter, ...fullKeys, room * WINDOW);
  const rows = await sql.query<Candidate>(parts.join('\nUNION ALL\n'), params);
  // The head of the queue offers its runs without a key (its keyed rows are locked and released at commit).
  const pool = rows.filter((c) => c.status === 'WAITING' || Number(c.pos) > 0 || c.concurrency_key === null);

  // 5. rank: within a key, woken runs first, then claim order; then priority, round, key position
  const byKey = new Map<string | null, Candidate[]>();
  for (const c of pool) byKey.set(c.concurrency_key, [...(byKey.get(c.concurrency_key) ?? []), c]);
  const order = (a: Candidate, b: Candidate) =>
    (a.status === b.status ? 0 : a.status === 'WAITING' ? -1 : 1) ||
    Number(a.priority) - Number(b.priority) ||
    ms(a.order_at) - ms(b.order_at) ||
    ms(a.available_at) - ms(b.available_at);
  const keyStarts = await keyWindows(
    sql,
    queue,
    l,
    [...byKey.keys()].filter((k): k is string => k !== null),
  );
  const ranked: Array<Candidate & { rn: number }> = [];
  for (const [k, cs] of byKey) {
    cs.sort(order).forEach((c, i) => {
      const rn = i + 1;
      if (k !== null && keyLimit !== null && rn > keyLimit - (running.get(k) ?? 0)) return;
      if (
        k !== null &&
        l.key_rate_limit !== null &&
        rn > l.key_rate_limit - inWindow(keyStarts.get(k) ?? [], at, l.key_rate_period_ms!).length
      )
        return;
      ranked.push({ ...c, rn });
    });
  }
  ranked.sort((a, b) => Number(a.priority) - Number(b.priority) || a.rn - b.rn || Number(a.pos) - Number(b.pos));
  const chosen = ranked.slice(0, room);

  // the cursor: the last key served, or the last key read if the room was not filled
  const servedKeys = chosen.filter((c) => c.concurrency_key !== null).sort((a, b) => Number(b.pos) - Number(a.pos));
  const cursor = chosen.length < room ? (scanned[scanned.length - 1] ?? null) : (servedKeys[0]?.concurrency_key ?? null);
  if (cursor !== null && cursor !== l.rr_key)
    await sql.execute(`UPDATE durable_queue_limits SET rr_key = ? WHERE queue = ?`, [cursor, queue]);

  if (chosen.length) await appendStarts(sql, queue, l, at, queueStarts, keyStarts, chosen);
  return leaseChosen(sql, history, chosen, owner, leaseMs, utc(new Date(at)));
}

/** The rate windows of these keys (with a keyRateLimit): their starts, by key. */
async function keyWindows(sql: SqlClient, queue: string, l: Limits, keys: string[]): Promise<Map<string, number[]>> {
  if (l.key_rate_limit === null || !keys.length) return new Map();
  const rows = await sql.query<{ key: string; starts: unknown }>(
    `SELECT \`key\`, starts FROM durable_rate_windows WHERE queue = ? AND \`key\` IN (${marks(keys.length)})`,
    [queue, ...keys],
  );
  return new Map(rows.map((r) => [r.key, json<number[]>(r.starts) ?? []]));
}

/** Appends this claim's starts (at its clock) to the queue's window and each key's, keeping each to its newest `limit` within its period. */
async function appendStarts(
  sql: SqlClient,
  queue: string,
  l: Limits,
  at: number,
  queueStarts: number[],
  keyStarts: Map<string, number[]>,
  chosen: Candidate[],
): Promise<void> {
  const windows: Array<[key: string, starts: number[]]> = [];
  const kept = (old: number[], n: number, limit: number, periodMs: number) =>
    [...inWindow(old, at, periodMs), ...Array.from({ length: n }, () => at)].sort((a, b) => a - b).slice(-limit);
  if (l.rate_limit !== null) windows.push(['', kept(queueStarts, chosen.length, l.rate_limit, l.rate_period_ms!)]);
  if (l.key_rate_limit !== null) {
    const perKey = new Map<string, number>();
    for (const c of chosen) if (c.concurrency_key !== null) perKey.set(c.concurrency_key, (perKey.get(c.concurrency_key) ?? 0) + 1);
    for (const [k, n] of perKey) windows.push([k, kept(keyStarts.get(k) ?? [], n, l.key_rate_limit, l.key_rate_period_ms!)]);
  }
  if (!windows.length) return;
  await sql.execute(
    `INSERT INTO durable_rate_windows (queue, \`key\`, starts, last_start_at) VALUES ${windows.map(() => '(?, ?, ?, ?)').join(', ')}
     ON DUPLICATE KEY UPDATE starts = VALUES(starts), last_start_at = VALUES(last_start_at)`,
    windows.flatMap(([k, starts]) => [queue, k, JSON.stringify(starts), utc(new Date(at))]),
  );
}
