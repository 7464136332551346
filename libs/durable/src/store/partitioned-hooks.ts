/**
 * Lifecycle hooks in distributed mode (Citus, see partitions.ts). Each partition has a history of its
 * own, so a consumer has a cursor and a lease per partition: a row of the reference table
 * durable_hook_cursors named `<consumer>\u001Fp<k>`. U+001F cannot be part of a consumer's name in
 * distributed mode (the engine refuses names with control characters there: checkHookConsumerNames),
 * so these rows never collide with a consumer's own.
 *
 * A partition's history ids are not in the order the rows were written: Citus draws a sequence's
 * numbers on the node that runs the INSERT, each node from a range of its own (node group g:
 * g·2⁴⁸ onwards, the coordinator from 1), and a statement runs on the partition's node or, split,
 * on the coordinator. Each range (a "stream") is in order, so a partition's position is one cursor
 * per stream: stream 0's in the partition's row, stream g's in a row `<consumer>\u001Fp<k>\u001Fg<g>`
 * (created when a stream first moves; a stream without a row is read from its start). A look reads
 * each stream after its cursor (the batch stopping, per stream, before the first row younger than
 * settleMs, as on a single server) and delivers the streams' rows merged, each stream in id order,
 * the next row the earliest (`at`, the database clock, milliseconds) of the streams' next ones, up to
 * the time every cut stream has been read to: a run's events come in the order they were written,
 * whichever node numbered them, as far as their times tell it across streams.
 */
import { checkIdentifierCharacters } from '../config/identifiers.js';
import type { HookCursorRow, HookEventRow } from './rows.js';
import { statement } from './statement.js';
import { partitionStore, toDate, type Store } from './store.js';

/** The separator between a consumer's name, its partition and its stream in the cursor rows' names. */
const SEPARATOR = '\u001F';

/** The cursor (and lease) row of `consumer` in partition k (stream 0's position). */
export const cursorName = (consumer: string, k: number): string => `${consumer}${SEPARATOR}p${k}`;
const streamName = (lease: string, g: number): string => `${lease}${SEPARATOR}g${g}`;

/** Distributed mode: refuses consumer names its cursor rows could collide with (control characters, U+001F among them). */
export function checkHookConsumerNames(store: Store, consumers: readonly string[]): void {
  if (store.layout.partitions === null) return;
  for (const c of consumers) checkIdentifierCharacters('onEvent', 'consumer', c);
}

/** The highest node group of the cluster (a catalog read on the coordinator): the streams a partition may have. */
const NODE_GROUPS = statement('hook_node_groups', `SELECT coalesce(max(groupid), 0)::int AS g FROM pg_dist_node`);

/**
 * A new consumer's row of one partition, at the newest row of stream 0. $1 row name. Returns it when
 * created (an existing row → nothing). Index: durable_run_events_pkey (max below 2⁴⁸).
 */
const ENSURE_CURSOR = statement(
  'ensure_partition_hook_cursor',
  `
INSERT INTO durable_hook_cursors (consumer, last_event_id)
SELECT $1, coalesce(max(id), 0) FROM durable_run_events WHERE id < 281474976710656
ON CONFLICT (consumer) DO NOTHING RETURNING consumer`,
);

/** The newest row of each stream 1..$1 of the partition (null: none). Index: durable_run_events_pkey (max per range). */
const STREAM_HEADS = statement(
  'hook_stream_heads',
  `
SELECT g::int AS stream, (SELECT max(e.id) FROM durable_run_events e WHERE e.id >= g << 48 AND e.id < (g + 1) << 48)::text AS newest
FROM generate_series(1::bigint, $1::bigint) AS g`,
);

/** Stream rows ($1 names, $2 positions), existing ones left as they are. */
const INSERT_STREAMS = statement(
  'insert_hook_streams',
  `
INSERT INTO durable_hook_cursors (consumer, last_event_id)
SELECT * FROM unnest($1::text[], $2::bigint[]) ON CONFLICT (consumer) DO NOTHING`,
);

/**
 * Takes (or renews) the lease of a partition's row: $1 row name, $2 owner, $3 lease ms. Returns
 * stream 0's position; no row when another instance holds it. Locks: the cursor row (UPDATE).
 */
const LEASE_CURSOR = statement(
  'lease_hook_cursor',
  `
UPDATE durable_hook_cursors
SET owner = $2, lease_expires_at = now() + $3::float8 * interval '1 millisecond', updated_at = now()
WHERE consumer = $1 AND (owner IS NULL OR owner = $2 OR lease_expires_at < now())
RETURNING last_event_id::text AS last_event_id`,
);

/** The stream rows of a partition's row (names starting with $1). */
const STREAM_CURSORS = statement(
  'hook_stream_cursors',
  `
SELECT consumer, last_event_id::text AS last_event_id FROM durable_hook_cursors WHERE left(consumer, length($1)) = $1`,
);

/**
 * Each stream 0..$3's rows after its position ($1 streams, $2 positions; a stream not given: from its
 * start), at most $4 per stream, in id order; `young`: written less than $5 ms ago; the detail and
 * the run's workflow for the kinds $6 only. Index: durable_run_events_pkey (id range per stream).
 */
const READ_STREAMS = statement(
  'read_hook_streams',
  `
WITH s AS (
  SELECT g, coalesce(c.after, g << 48) AS after
  FROM generate_series(0::bigint, $3::bigint) AS g LEFT JOIN unnest($1::bigint[], $2::bigint[]) AS c(stream, after) ON c.stream = g)
SELECT x.id::text AS id, s.g::int AS stream, x.run_id, x.kind, x.at, x.at >= now() - $5::float8 * interval '1 millisecond' AS young,
       CASE WHEN x.kind = ANY($6::text[]) THEN x.detail END AS detail,
       CASE WHEN x.kind = ANY($6::text[]) THEN (SELECT r.workflow_name FROM durable_runs r WHERE r.id = x.run_id) END AS workflow
FROM s CROSS JOIN LATERAL (
  SELECT e.id, e.run_id, e.kind, e.detail, e.at FROM durable_run_events e
  WHERE e.id > s.after AND e.id < (s.g + 1) << 48 ORDER BY e.id LIMIT $4) x
ORDER BY x.id`,
);

/**
 * Moves a stream row forward (created if need be) while $4 holds the lease of the partition's row $2:
 * $1 stream row, $3 position. Never backwards.
 */
const ADVANCE_STREAM = statement(
  'advance_hook_stream',
  `
INSERT INTO durable_hook_cursors (consumer, last_event_id)
SELECT $1, $3::bigint FROM durable_hook_cursors l WHERE l.consumer = $2 AND l.owner = $4
ON CONFLICT (consumer) DO UPDATE SET last_event_id = excluded.last_event_id, updated_at = excluded.updated_at
WHERE durable_hook_cursors.last_event_id < excluded.last_event_id`,
);

/** Moves a partition's row (stream 0) forward if $2 holds its lease: $1 row, $3 position. */
const ADVANCE_CURSOR = statement(
  'advance_partition_hook_cursor',
  `
UPDATE durable_hook_cursors SET last_event_id = $3::bigint, updated_at = now()
WHERE consumer = $1 AND owner = $2 AND last_event_id < $3::bigint`,
);

/** Gives up the leases of rows $1 (names) held by $2 (shutdown). */
const RELEASE_CURSORS = statement(
  'release_hook_cursors',
  `
UPDATE durable_hook_cursors SET owner = NULL, lease_expires_at = NULL WHERE consumer = ANY($1::text[]) AND owner = $2`,
);

/**
 * The cursor rows of partition $2 (`p<k>`: its rows and their stream rows) with how many rows of
 * their stream each has still to read (counted up to $1). Index: durable_run_events_pkey.
 */
const LIST_PARTITION_CURSORS = statement(
  'list_partition_hook_cursors',
  `
SELECT c.consumer, c.last_event_id::text AS last_event_id, c.owner, c.lease_expires_at, c.updated_at,
       (SELECT count(*) FROM (SELECT 1 FROM durable_run_events e
                              WHERE e.id > c.last_event_id AND e.id < ((c.last_event_id >> 48) + 1) << 48 LIMIT $1) x)::int AS behind
FROM durable_hook_cursors c WHERE split_part(c.consumer, chr(31), 2) = $2 ORDER BY c.consumer`,
);

/** How many node groups the cluster has (the highest group id): read once per look at a consumer. */
export async function nodeGroups(store: Store): Promise<number> {
  const [row] = await store.sql.query<{ g: number }>(NODE_GROUPS, []);
  return Number(row?.g ?? 0);
}

/**
 * A new consumer's rows in partition k (store: the partition's), at the newest row of each stream,
 * in one transaction (the partition's row commits with its stream rows). An existing row: nothing.
 */
export async function ensurePartitionCursor(store: Store, consumer: string, groups: number): Promise<void> {
  await store.sql.transaction(async (sql) => {
    const [created] = await sql.query(ENSURE_CURSOR, [consumer]);
    if (!created || groups < 1) return;
    const heads = (await sql.query<{ stream: number; newest: string | null }>(STREAM_HEADS, [groups])).filter((h) => h.newest !== null);
    if (heads.length) await sql.query(INSERT_STREAMS, [heads.map((h) => streamName(consumer, h.stream)), heads.map((h) => h.newest)]);
  });
}

/** One history row of a partition's look, in delivery order; `event` for the kinds delivered. */
export interface StreamRow {
  id: string;
  stream: number;
  event: HookEventRow | null;
}

/**
 * One look at a partition (store: the partition's): the lease, the streams' positions, their rows;
 * `rows` are those deliverable now, merged in time order (see the file's comment). `full`: a stream
 * had more rows (look again at once).
 */
export async function readPartitionBatch(
  store: Store,
  a: { consumer: string; owner: string; leaseMs: number; settleMs: number; limit: number; kinds: string[]; groups: number },
): Promise<{ held: boolean; full: boolean; rows: StreamRow[] }> {
  const [lease] = await store.sql.query<{ last_event_id: string }>(LEASE_CURSOR, [a.consumer, a.owner, a.leaseMs]);
  if (!lease) return { held: false, full: false, rows: [] };
  const positions = new Map<number, string>([[0, lease.last_event_id]]);
  const prefix = streamName(a.consumer, 0).slice(0, -1);
  for (const r of await store.sql.query<{ consumer: string; last_event_id: string }>(STREAM_CURSORS, [prefix]))
    positions.set(Number(r.consumer.slice(prefix.length)), r.last_event_id);
  const raw = await store.sql.query<Record<string, unknown>>(READ_STREAMS, [
    [...positions.keys()],
    [...positions.values()],
    Math.max(a.groups, ...positions.keys()),
    a.limit,
    a.settleMs,
    a.kinds,
  ]);
  return { held: true, ...deliverable(raw, a.limit, new Set(a.kinds)) };
}

interface Read {
  id: string;
  stream: number;
  at: number;
  young: boolean;
  row: Record<string, unknown>;
}

/** The rows to deliver now, merged by time; see the file's comment. */
function deliverable(raw: Record<string, unknown>[], limit: number, kinds: ReadonlySet<string>): { full: boolean; rows: StreamRow[] } {
  const streams = new Map<number, Read[]>();
  for (const row of raw) {
    const r: Read = { id: row.id as string, stream: Number(row.stream), at: toDate(row.at)!.getTime(), young: !!row.young, row };
    streams.set(r.stream, [...(streams.get(r.stream) ?? []), r]);
  }
  // Each stream's rows before its first young one; a stream cut (young rows, or more than the limit) bounds the merge at its last time read.
  let horizon = Infinity;
  let full = false;
  const kept: Read[][] = [];
  for (const rows of streams.values()) {
    const young = rows.findIndex((r) => r.young);
    const old = young < 0 ? rows : rows.slice(0, young);
    if (rows.length >= limit) full = true;
    if (young >= 0 || rows.length >= limit) horizon = Math.min(horizon, old.length ? Math.max(...old.map((r) => r.at)) : rows[young].at);
    kept.push(old);
  }
  // Merged: each stream in id order (as on a single server), the next row the earliest of the streams' next ones.
  const heads = kept.map((old) => {
    const later = old.findIndex((r) => r.at > horizon);
    return later < 0 ? old : old.slice(0, later);
  });
  const rows: Read[] = [];
  for (;;) {
    let next: Read[] | null = null;
    for (const h of heads) if (h.length && (!next || h[0].at < next[0].at)) next = h;
    if (!next) break;
    rows.push(next.shift()!);
  }
  return {
    full,
    rows: rows.map(({ id, stream, row }) => ({
      id,
      stream,
      event: kinds.has(row.kind as string)
        ? {
            id,
            runId: row.run_id as string,
            kind: row.kind as string,
            detail: (typeof row.detail === 'string' ? JSON.parse(row.detail) : row.detail) as HookEventRow['detail'],
            at: toDate(row.at)!.toISOString(),
            workflow: (row.workflow as string | null) ?? null,
          }
        : null,
    })),
  };
}

/**
 * The streams' new positions once the first `handled` rows of a look are delivered: per stream, the
 * last of its rows (in id order) before which every one was handled.
 */
export function positionsAfter(rows: readonly StreamRow[], handled: number): Map<number, string> {
  const done = new Set(rows.slice(0, handled).map((r) => `${r.stream}/${r.id}`));
  const out = new Map<number, string>();
  const byId = [...rows].sort((x, y) => (BigInt(x.id) < BigInt(y.id) ? -1 : 1));
  const stopped = new Set<number>();
  for (const r of byId) {
    if (stopped.has(r.stream)) continue;
    if (done.has(`${r.stream}/${r.id}`)) out.set(r.stream, r.id);
    else stopped.add(r.stream);
  }
  return out;
}

/** Moves a partition's streams to `positions` while `owner` holds the lease of its row `consumer`. */
export async function advancePartitionCursors(
  store: Store,
  consumer: string,
  owner: string,
  positions: Map<number, string>,
): Promise<void> {
  for (const [g, id] of positions) {
    if (g === 0) await store.sql.query(ADVANCE_CURSOR, [consumer, owner, id]);
    else await store.sql.query(ADVANCE_STREAM, [streamName(consumer, g), consumer, id, owner]);
  }
}

/** Gives up this owner's leases of every partition of `consumer`. */
export async function releasePartitionCursors(store: Store, consumer: string, owner: string): Promise<void> {
  const names = Array.from({ length: store.layout.partitions ?? 0 }, (_, k) => cursorName(consumer, k));
  await store.sql.query(RELEASE_CURSORS, [names, owner]);
}

/**
 * The admin view in distributed mode: one entry per consumer, its partitions' rows added up.
 * lastEventId: each partition's position (`p0:12 p1:40/281474976710700 …`: stream 0's, then the
 * other streams', ids being per partition and stream); owner: the instances whose lease is live
 * (else the last holder), comma-separated, with the latest expiry; updatedAt: the oldest cursor move;
 * behind: the streams' backlogs added up (up to the limit; a stream without a row yet is not counted).
 * Rows left from a single server (no partition in their name) are not used in this mode and not shown.
 */
export async function listPartitionedHookCursors(store: Store, behindLimit: number): Promise<HookCursorRow[]> {
  const byConsumer = new Map<string, Array<Record<string, unknown> & { k: number; stream: boolean }>>();
  for (let k = 0; k < (store.layout.partitions ?? 0); k++) {
    const rows = await partitionStore(store, k).sql.query<Record<string, unknown>>(LIST_PARTITION_CURSORS, [behindLimit, `p${k}`]);
    for (const r of rows) {
      const [consumer, , stream] = (r.consumer as string).split(SEPARATOR);
      byConsumer.set(consumer, [...(byConsumer.get(consumer) ?? []), { ...r, k, stream: stream !== undefined }]);
    }
  }
  const now = Date.now();
  const time = (v: unknown) => toDate(v)?.getTime() ?? 0;
  return [...byConsumer.keys()].sort().map((consumer) => {
    const rows = byConsumer.get(consumer)!;
    const leases = rows.filter((r) => !r.stream);
    const leased = leases
      .filter((r) => r.owner != null && r.lease_expires_at != null)
      .sort((a, b) => time(b.lease_expires_at) - time(a.lease_expires_at));
    const live = leased.filter((r) => time(r.lease_expires_at) > now);
    const holders = [...new Set((live.length ? live : leased.slice(0, 1)).map((r) => r.owner as string))];
    const positions = leases
      .sort((a, b) => a.k - b.k)
      .map((l) => [l, ...rows.filter((r) => r.stream && r.k === l.k)].map((r) => r.last_event_id as string).join('/'));
    return {
      consumer,
      lastEventId: leases.map((l, i) => `p${l.k}:${positions[i]}`).join(' '),
      owner: holders.length ? holders.join(', ') : null,
      leaseExpiresAt: leased.length ? toDate(leased[0].lease_expires_at) : null,
      updatedAt: new Date(Math.min(...rows.map((r) => time(r.updated_at)))),
      behind: Math.min(
        behindLimit,
        rows.reduce((n, r) => n + Number(r.behind), 0),
      ),
    };
  });
}
