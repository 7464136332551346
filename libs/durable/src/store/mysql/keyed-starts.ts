/**
 * Singleton (dedupe key) and debounced starts on a MySQL-family database (see keyed-starts.ts), and
 * what the admin API shows of them (see keyed-runs.ts). Both rest on the unique indexes over the
 * generated columns of schema.mysql.sql: (workflow_name, dedupe_active), the key while the run is
 * active, and (workflow_name, debounce_pending), the key while the run has not started. Two starts
 * racing from different instances (or inside two users' transactions) cannot both create a run: the
 * second INSERT waits for the first to commit and fails with a duplicate key. The reads that follow
 * a conflict lock what they read, so they see the winner even inside a REPEATABLE READ transaction
 * whose snapshot predates it.
 */
import type { DebounceStart, NewRun } from '../rows.js';
import type { SqlClient } from '../sql-client.js';
import type { Store } from '../store.js';
import { wakeQueues } from './checkpoints.js';
import { date, DUE_BY, insertHistory, insertTags, isDuplicateKey, NOW, utc } from './sql.js';

const ACTIVE = `('PENDING', 'RUNNING', 'WAITING')`;
const plus = (ms: string) => `(${NOW} + INTERVAL ROUND(${ms} * 1000) MICROSECOND)`;

/**
 * Debounced starts of one key take turns within a process, per client. They take turns in the
 * database anyway (each holds the key's run row for its few statements), but a burst of them no
 * longer parks a connection per start on that lock: the pool stays free for claims and checkpoints,
 * even while another process holds the row (one frozen inside its transaction holds it until the
 * server ends the transaction).
 */
const turns = new WeakMap<object, Map<string, Promise<unknown>>>();
function inTurn<T>(owner: object, key: string, fn: () => Promise<T>): Promise<T> {
  let queue = turns.get(owner);
  if (!queue) turns.set(owner, (queue = new Map()));
  const mine = (queue.get(key) ?? Promise.resolve()).then(fn, fn);
  const settled = mine.then(
    () => {},
    () => {},
  );
  queue.set(key, settled);
  void settled.then(() => {
    if (queue.get(key) === settled) queue.delete(key);
  });
  return mine;
}

/**
 * Inserts one run with its dedupe or debounce columns; false on a duplicate key (its id exists, or
 * the key is held). `available`: the SQL of its first due time, with `availableParams`.
 */
async function insertKeyed(
  sql: SqlClient,
  r: NewRun,
  keyed: { dedupeKey?: string; debounceKey?: string; debounceUntilMs?: number | null },
  available: string,
  availableParams: unknown[],
): Promise<boolean> {
  try {
    await sql.execute(
      `INSERT INTO durable_runs (id, workflow_name, queue, status, input, priority, available_at, order_at, deadline_at, parent_id,
                                 app_version, concurrency_key, traceparent, tags, context, dedupe_key, debounce_key, debounce_until, created_at, updated_at)
       VALUES (?, ?, ?, 'PENDING', ?, ?, ${available}, ${available}, ${r.timeoutMs == null ? 'NULL' : plus('?')}, ?, ?, ?, ?, ?, ?, ?, ?,
               ${keyed.debounceUntilMs == null ? 'NULL' : plus('?')}, ${NOW}, ${NOW})`,
      [
        r.id,
        r.workflowName,
        r.queue,
        r.input,
        r.priority,
        ...availableParams,
        ...availableParams,
        ...(r.timeoutMs == null ? [] : [r.timeoutMs]),
        r.parentId,
        r.appVersion,
        r.concurrencyKey,
        r.traceparent ?? null,
        r.tags.length ? JSON.stringify(r.tags) : null,
        r.context ?? null,
        keyed.dedupeKey ?? null,
        keyed.debounceKey ?? null,
        ...(keyed.debounceUntilMs == null ? [] : [keyed.debounceUntilMs]),
      ],
    );
  } catch (err) {
    if (isDuplicateKey(err)) return false;
    throw err;
  }
  await insertTags(sql, [r]);
  return true;
}

/** Inserts a run with a dedupe key; false on a conflict (its id exists, or an active run of the workflow holds the key). */
export async function insertDeduped(store: Store, r: NewRun, dedupeKey: string): Promise<boolean> {
  return store.sql.transaction(async (sql) => {
    const runAt = utc(r.runAt);
    const created = await insertKeyed(sql, r, { dedupeKey }, `(coalesce(?, ${NOW}) + INTERVAL ROUND(coalesce(?, 0) * 1000) MICROSECOND)`, [
      runAt,
      r.delayMs,
    ]);
    if (!created) return false;
    await insertHistory(sql, store.history, [[r.id, 'created', { workflow: r.workflowName, queue: r.queue, dedupeKey }]]);
    const [due] = await sql.query(`SELECT 1 AS x FROM durable_runs WHERE id = ? AND available_at <= ${DUE_BY}`, [r.id]);
    if (due) wakeQueues(sql, [r]);
    return true;
  });
}

/** What a dedupe conflict was with: the run with the same id, or the active run holding the key; null if it ended meanwhile. */
export async function dedupeHolder(
  store: Store,
  r: NewRun,
  dedupeKey: string,
): Promise<{ id: string; workflowName: string; sameId: boolean } | null> {
  const [row] = await store.sql.query<{ id: string; workflow_name: string }>(
    `SELECT id, workflow_name FROM durable_runs
     WHERE id = ? OR (workflow_name = ? AND dedupe_active = ? AND status IN ${ACTIVE})
     ORDER BY id = ? DESC LIMIT 1 LOCK IN SHARE MODE`,
    [r.id, r.workflowName, dedupeKey, r.id],
  );
  return row ? { id: row.id, workflowName: row.workflow_name, sameId: row.id === r.id } : null;
}

/**
 * A debounced start: the run of the workflow with the key that has not started yet takes this start
 * (locked, its start moved to now + period, never past its debounce_until nor earlier than it was;
 * with input 'last' its input replaced), or a new run starts in `periodMs` (at the latest
 * `maxDelayMs` from now). Null: a concurrent start created the run first (the caller tries again).
 */
export async function debounceStart(
  store: Store,
  r: NewRun,
  d: DebounceStart,
): Promise<{ id: string; created: boolean; startsAt: Date } | null> {
  return inTurn(store.sql, `${r.workflowName}\u0000${d.key}`, () => debounceStartNow(store, r, d));
}

async function debounceStartNow(
  store: Store,
  r: NewRun,
  d: DebounceStart,
): Promise<{ id: string; created: boolean; startsAt: Date } | null> {
  return store.sql.transaction(async (sql) => {
    // A locking read returns the row as its last writer committed it: a claim that took the run while
    // this start waited for the lock has made it RUNNING, and then this start makes a new run.
    const [found] = await sql.query<{ id: string; status: string; started_at: unknown }>(
      `SELECT id, status, started_at FROM durable_runs WHERE workflow_name = ? AND debounce_pending = ? FOR UPDATE`,
      [r.workflowName, d.key],
    );
    const cur = found && found.status === 'PENDING' && found.started_at == null ? found : undefined;
    // The time of this start, read after the lock: the run's new start and its history row share it,
    // and a start that waited for the lock counts from when it got it.
    const [{ now }] = await sql.query<{ now: unknown }>(`SELECT ${NOW} AS now`);
    const at = utc(date(now))!;
    const fromAt = `(CAST(? AS DATETIME(3)) + INTERVAL ROUND(? * 1000) MICROSECOND)`;
    if (cur) {
      const pushed = `GREATEST(available_at, ${fromAt})`;
      await sql.execute(
        `UPDATE durable_runs SET available_at = LEAST(${pushed}, coalesce(debounce_until, ${pushed})),
           input = ${d.input === 'last' ? '?' : 'input'}, updated_at = ${NOW}
         WHERE id = ?`,
        [at, d.periodMs, at, d.periodMs, ...(d.input === 'last' ? [r.input] : []), cur.id],
      );
      const [row] = await sql.query<{ available_at: unknown }>(`SELECT available_at FROM durable_runs WHERE id = ?`, [cur.id]);
      const startsAt = date(row.available_at)!;
      await insertHistory(sql, store.history, [[cur.id, 'debounced', { input: d.input, startsAt: startsAt.toISOString() }]], at);
      return { id: cur.id, created: false, startsAt };
    }
    const first = d.maxDelayMs === null ? d.periodMs : Math.min(d.periodMs, d.maxDelayMs);
    const created = await insertKeyed(sql, r, { debounceKey: d.key, debounceUntilMs: d.maxDelayMs }, fromAt, [at, first]);
    if (!created) return null;
    const [row] = await sql.query<{ available_at: unknown }>(`SELECT available_at FROM durable_runs WHERE id = ?`, [r.id]);
    await insertHistory(sql, store.history, [[r.id, 'created', { workflow: r.workflowName, queue: r.queue, debounceKey: d.key }]], at);
    return { id: r.id, created: true, startsAt: date(row.available_at)! };
  });
}

/** The rows of debouncedRuns() (keyed-runs.ts maps them): runs that have not started, soonest first. The unique index leads with the workflow, so this reads the table (an admin view). */
export function debouncedRows(store: Store, limit: number): Promise<Array<Record<string, unknown>>> {
  return store.sql.query(
    `SELECT workflow_name, debounce_key, id, available_at, debounce_until FROM durable_runs
     WHERE debounce_pending IS NOT NULL ORDER BY available_at LIMIT ?`,
    [limit],
  );
}

/** The rows of singletonRuns() (keyed-runs.ts maps them): active runs holding a dedupe key, newest first (an admin view, as above). */
export function singletonRows(store: Store, limit: number): Promise<Array<Record<string, unknown>>> {
  return store.sql.query(
    `SELECT workflow_name, dedupe_key, id, status, created_at FROM durable_runs
     WHERE dedupe_active IS NOT NULL ORDER BY created_at DESC LIMIT ?`,
    [limit],
  );
}
