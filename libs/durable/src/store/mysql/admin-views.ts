/**
 * The admin API's other views on a MySQL-family database: one run in detail, statistics, charts,
 * versions in flight and the live feed's tick (see admin-detail.ts, admin-stats.ts, admin-charts.ts,
 * admin-versions.ts and live.ts). A view that is one statement on PostgreSQL is a few here (no
 * json_agg over correlated subqueries); each reads by primary key or through the same indexes.
 */
import { CHART_RANGES, CLIP_BYTES, DETAIL_LIMITS, LIVE_CHANGED_LIMIT } from '../admin-rows.js';
import type { RunStatus } from '../rows.js';
import type { ChartBucket, ChartRange, LiveTick, RunDetailRow, StatsRows, VersionInFlightRow } from '../admin-rows.js';
import type { Store } from '../store.js';
import { date, json, marks, NOW } from './sql.js';
import { detailRun, detailTotals, runSummaryOf } from '../admin-rows.js';
import { activeStatsRow, finishedStatsRow, perMinuteStatsRow, versionInFlightRow } from '../admin-rows.js';
import { iso } from '../store.js';

/**
 * A JSON column as three: its text when it is at most CLIP_BYTES, else its size and first 2000
 * characters (as clip() in admin-detail.ts): a big value is cut on the server, not sent whole.
 */
const clip = (col: string, as: string) =>
  `CASE WHEN octet_length(${col}) <= ${CLIP_BYTES} THEN ${col} END AS ${as}, octet_length(${col}) AS ${as}__bytes,
   CASE WHEN octet_length(${col}) > ${CLIP_BYTES} THEN left(${col}, 2000) END AS ${as}__preview`;

/** A column read through clip(): its JSON value, or { $truncated, bytes, preview }. */
const clipped = (r: Record<string, unknown>, as: string): unknown => {
  if (r[`${as}__bytes`] == null) return null;
  if (r[as] != null) return json(r[as]);
  return { $truncated: true, bytes: Number(r[`${as}__bytes`]), preview: String(r[`${as}__preview`]) };
};

/** The run's columns a detail shows (as SELECT_RUN_DETAIL's), its progress clipped. */
const DETAIL_COLUMNS = `r.id, r.workflow_name, r.queue, r.status, r.input, r.output, r.error, r.priority, r.attempt,
  r.lease_owner, r.lease_expires_at, r.lease_epoch, r.parent_id, r.app_version, r.deadline_at, r.available_at,
  r.created_at, r.started_at, r.finished_at, r.updated_at, r.cancel_requested_at, r.tags, ${clip('r.progress', 'progress')},
  r.concurrency_key, r.traceparent, r.context`;

/**
 * See runDetail() in admin-detail.ts: the run with how many rows of each kind it has, then its newest
 * rows of each kind (no json_agg over correlated subqueries here: one statement per kind, in
 * parallel). Indexes: durable_runs_pkey, durable_steps' primary key (run_id, seq), durable_messages_idempotency_key
 * (leading run_id), durable_events' primary key (run_id, key), durable_run_events_run_idx, durable_runs_parent_idx.
 */
export async function runDetail(store: Store, id: string): Promise<RunDetailRow | null> {
  const sql = store.sql;
  const [r] = await sql.query<Record<string, unknown>>(
    `SELECT ${DETAIL_COLUMNS}, ${NOW} AS db_now,
       (SELECT count(*) FROM durable_steps s WHERE s.run_id = r.id) AS steps_total,
       (SELECT count(*) FROM durable_messages m WHERE m.run_id = r.id) AS messages_total,
       (SELECT count(*) FROM durable_events e WHERE e.run_id = r.id) AS events_total,
       (SELECT count(*) FROM durable_run_events h WHERE h.run_id = r.id) AS history_total,
       (SELECT count(*) FROM durable_runs c WHERE c.parent_id = r.id) AS children_total
     FROM durable_runs r WHERE r.id = ?`,
    [id],
  );
  if (!r) return null;
  const [steps, messages, events, history, children] = await Promise.all([
    sql.query<Record<string, unknown>>(
      `SELECT seq, name, status, attempts, started_at, finished_at, compensates,
         ${clip('output', 'output')}, ${clip('error', 'error')}, ${clip('compensation', 'compensation')}
       FROM durable_steps WHERE run_id = ? ORDER BY seq LIMIT ?`,
      [id, DETAIL_LIMITS.steps],
    ),
    sql.query<Record<string, unknown>>(
      `SELECT id, topic, ${clip('payload', 'payload')}, idempotency_key, created_at, consumed_seq, consumed_at
       FROM durable_messages WHERE run_id = ? ORDER BY id DESC LIMIT ?`,
      [id, DETAIL_LIMITS.messages],
    ),
    sql.query<Record<string, unknown>>(
      `SELECT \`key\`, ${clip('value', 'value')}, updated_at FROM durable_events WHERE run_id = ? ORDER BY \`key\` LIMIT ?`,
      [id, DETAIL_LIMITS.events],
    ),
    sql.query<Record<string, unknown>>(
      `SELECT id, kind, ${clip('detail', 'detail')}, at FROM durable_run_events WHERE run_id = ? ORDER BY id DESC LIMIT ?`,
      [id, DETAIL_LIMITS.history],
    ),
    sql.query<Record<string, unknown>>(
      'SELECT id, workflow_name, status, created_at, finished_at FROM durable_runs WHERE parent_id = ? ORDER BY created_at, id LIMIT ?',
      [id, DETAIL_LIMITS.children],
    ),
  ]);
  const stepRows = steps.map((s) => {
    const started = date(s.started_at);
    const finished = date(s.finished_at);
    return {
      seq: Number(s.seq),
      name: s.name,
      status: s.status,
      attempts: Number(s.attempts),
      startedAt: started?.toISOString() ?? null,
      finishedAt: finished?.toISOString() ?? null,
      durationMs: started && finished ? finished.getTime() - started.getTime() : null,
      output: clipped(s, 'output'),
      error: clipped(s, 'error'),
      compensation: clipped(s, 'compensation'),
      compensates: s.compensates == null ? null : Number(s.compensates),
    };
  });
  return {
    run: detailRun({ ...r, progress: clipped(r, 'progress') }, stepRows, json),
    steps: stepRows,
    messages: messages.reverse().map((m) => ({
      id: String(m.id),
      topic: m.topic,
      payload: clipped(m, 'payload'),
      idempotencyKey: m.idempotency_key ?? null,
      createdAt: iso(m.created_at),
      consumedSeq: m.consumed_seq == null ? null : Number(m.consumed_seq),
      consumedAt: iso(m.consumed_at),
    })),
    events: events.map((e) => ({ key: e.key, value: clipped(e, 'value'), updatedAt: iso(e.updated_at) })),
    history: history.reverse().map((h) => ({ id: String(h.id), kind: h.kind, detail: clipped(h, 'detail'), at: iso(h.at) })),
    children: children.map((c) => ({
      id: c.id,
      workflowName: c.workflow_name,
      status: c.status,
      createdAt: iso(c.created_at),
      finishedAt: iso(c.finished_at),
    })),
    dbNow: iso(r.db_now)!,
    totals: detailTotals(r),
  };
}

/** See runSummary() in admin-detail.ts. */
export async function runSummary(
  store: Store,
  id: string,
): Promise<{ id: string; workflowName: string; status: RunStatus; updatedAt: string; cancelRequestedAt: string | null } | null> {
  const [r] = await store.sql.query<Record<string, unknown>>(
    'SELECT id, workflow_name, status, updated_at, cancel_requested_at FROM durable_runs WHERE id = ?',
    [id],
  );
  return runSummaryOf(r);
}

/** A DATETIME cut to its minute (date_trunc('minute', …)): text, read back as UTC by date(). */
const minuteOf = (col: string) => `DATE_FORMAT(${col}, '%Y-%m-%d %H:%i:00')`;

/** The first minute of the statistics' hour: 59 minutes before the database clock's current one. */
const HOUR_START = `(CAST(${minuteOf(NOW)} AS DATETIME(3)) - INTERVAL 59 MINUTE)`;

/** See STATS_ACTIVE in admin-stats.ts. Index: durable_runs_status_created_idx (status IN: the unfinished rows only). */
const STATS_ACTIVE = `
SELECT workflow_name, queue, status, count(*) AS n,
       min(CASE WHEN status IN ('PENDING', 'WAITING') AND available_at <= ${NOW} THEN available_at END) AS oldest_due,
       sum(CASE WHEN status = 'RUNNING' AND lease_expires_at < ${NOW} THEN 1 ELSE 0 END) AS expired
FROM durable_runs WHERE status IN ('PENDING', 'RUNNING', 'WAITING')
GROUP BY workflow_name, queue, status`;

/** See STATS_FINISHED in admin-stats.ts (? = the window in whole minutes, twice). Index: durable_runs_finished_idx or durable_runs_updated_idx. */
const STATS_FINISHED = `
SELECT workflow_name, queue, status, count(*) AS n FROM durable_runs
WHERE updated_at >= ${NOW} - INTERVAL ? MINUTE AND finished_at >= ${NOW} - INTERVAL ? MINUTE
GROUP BY workflow_name, queue, status`;

/**
 * See STATS_PER_MINUTE in admin-stats.ts: the same two halves (starts, ends) of the rows updated in
 * the hour, as a UNION ALL of two range scans (durable_runs_updated_idx; the ends may take
 * durable_runs_finished_idx), grouped by minute on the server.
 */
const STATS_PER_MINUTE = `
SELECT workflow_name, queue, minute, sum(started) AS started, sum(succeeded) AS succeeded, sum(failed) AS failed, sum(cancelled) AS cancelled
FROM (
  SELECT workflow_name, queue, ${minuteOf('started_at')} AS minute, 1 AS started, 0 AS succeeded, 0 AS failed, 0 AS cancelled
  FROM durable_runs WHERE updated_at >= ${HOUR_START} AND started_at >= ${HOUR_START}
  UNION ALL
  SELECT workflow_name, queue, ${minuteOf('finished_at')}, 0, status = 'SUCCEEDED', status = 'FAILED', status = 'CANCELLED'
  FROM durable_runs WHERE updated_at >= ${HOUR_START} AND finished_at >= ${HOUR_START}
) ev
GROUP BY workflow_name, queue, minute`;

/** See stats() in admin-stats.ts. */
export async function stats(store: Store, windowMinutes: number): Promise<StatsRows> {
  const [active, finished, perMinute, [now]] = await Promise.all([
    store.sql.query<Record<string, unknown>>(STATS_ACTIVE),
    store.sql.query<Record<string, unknown>>(STATS_FINISHED, [windowMinutes, windowMinutes]),
    store.sql.query<Record<string, unknown>>(STATS_PER_MINUTE),
    store.sql.query<{ now: unknown; minute: unknown }>(`SELECT ${NOW} AS now, ${minuteOf(NOW)} AS minute`),
  ]);
  return {
    dbNow: iso(now.now)!,
    currentMinute: iso(now.minute)!,
    active: active.map(activeStatsRow),
    finished: finished.map(finishedStatsRow),
    perMinute: perMinute.map(perMinuteStatsRow),
  };
}

/** See charts() in admin-charts.ts: buckets counted here from the bucket number MariaDB computes (ms since the start, divided). */
export async function charts(store: Store, range: ChartRange): Promise<{ range: ChartRange; bucketMs: number; buckets: ChartBucket[] }> {
  const { ms, bucketMs } = CHART_RANGES[range];
  const [now] = await store.sql.query<{ now: unknown }>(`SELECT ${NOW} AS now`);
  const end = date(now.now)!.getTime();
  const start = Math.floor((end - ms) / bucketMs) * bucketMs + bucketMs;
  const from = new Date(start).toISOString().replace('T', ' ').replace('Z', '');
  const bucketOf = (col: string) => `FLOOR(TIMESTAMPDIFF(MICROSECOND, ?, ${col}) / 1000 / ?)`;
  const [started, finished] = await Promise.all([
    store.sql.query<{ b: unknown; n: unknown }>(
      `SELECT ${bucketOf('created_at')} AS b, count(*) AS n FROM durable_runs WHERE created_at >= ? GROUP BY 1`,
      [from, bucketMs, from],
    ),
    store.sql.query<{ b: unknown; status: string; n: unknown }>(
      `SELECT ${bucketOf('finished_at')} AS b, status, count(*) AS n FROM durable_runs WHERE finished_at >= ? GROUP BY 1, 2`,
      [from, bucketMs, from],
    ),
  ]);
  const buckets: ChartBucket[] = [];
  for (let t = start; t <= end; t += bucketMs)
    buckets.push({ at: new Date(t).toISOString(), started: 0, succeeded: 0, failed: 0, cancelled: 0 });
  for (const r of started) {
    const b = buckets[Number(r.b)];
    if (b) b.started += Number(r.n);
  }
  for (const r of finished) {
    const b = buckets[Number(r.b)];
    const key = r.status.toLowerCase() as 'succeeded' | 'failed' | 'cancelled';
    if (b && key in b) b[key] += Number(r.n);
  }
  return { range, bucketMs, buckets };
}

/** See versionsInFlight() in admin-versions.ts. */
export async function versionsInFlight(store: Store): Promise<VersionInFlightRow[]> {
  const rows = await store.sql.query<Record<string, unknown>>(
    `SELECT app_version, workflow_name, status, count(*) AS n, min(created_at) AS oldest FROM durable_runs
     WHERE status IN ('PENDING', 'RUNNING', 'WAITING') GROUP BY app_version, workflow_name, status`,
  );
  return rows.map(versionInFlightRow);
}

/**
 * See liveTick() in live.ts. MariaDB has no snapshot horizon to read: a run's version is its
 * updated_at (ms), the horizon is `since` (versions older than it are not returned again), and the
 * oldest open transaction is taken as now (the feed's slack covers the engine's transactions, which
 * last milliseconds).
 */
export async function liveTick(store: Store, since: Date, _horizon: string | null, watched: string[]): Promise<LiveTick> {
  const sinceText = since.toISOString().replace('T', ' ').replace('Z', '');
  const [[now], changed, seen] = await Promise.all([
    store.sql.query<{ now: unknown }>(`SELECT ${NOW} AS now`),
    store.sql.query<{ id: string; status: string; updated_at: unknown }>(
      'SELECT id, status, updated_at FROM durable_runs WHERE updated_at >= ? ORDER BY updated_at LIMIT ?',
      [sinceText, LIVE_CHANGED_LIMIT + 1],
    ),
    watched.length
      ? store.sql.query<{ id: string; status: string; updated_at: unknown; steps: unknown; progress: unknown }>(
          `SELECT r.id, r.status, r.updated_at, (SELECT count(*) FROM durable_steps s WHERE s.run_id = r.id) AS steps, md5(coalesce(r.progress, '')) AS progress
           FROM durable_runs r WHERE r.id IN (${marks(watched.length)})`,
          watched,
        )
      : Promise.resolve([]),
  ]);
  const at = date(now.now)!;
  return {
    now: at,
    horizon: String(since.getTime()),
    oldest: at,
    changed: changed.map((c) => ({ id: c.id, status: c.status, xid: String(date(c.updated_at)!.getTime()) })),
    watched: seen.map((w) => ({ id: w.id, v: `${w.status}:${iso(w.updated_at)}:${Number(w.steps)}:${String(w.progress)}` })),
  };
}
