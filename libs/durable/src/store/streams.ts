/** The chunks runs write to their streams (Durable.stream) and the app reads (readStream). */
import * as mysql from './mysql/streams.js';
import { statement } from './statement.js';
import { STREAM_CHANNEL } from './sql-fragments.js';
import type { ChunkWrite, RunStatus, StoredChunk, StreamPage, StreamSummary } from './rows.js';
export type { ChunkWrite, StoredChunk, StreamPage, StreamSummary } from './rows.js';
import { runStore, type Store } from './store.js';
import * as partitioned from './partitioned-waits.js';

/**
 * Appends a chunk to a run's stream, fenced by the writer's epoch: its position is the stream's
 * next (the writer is the run's only holder and writes one chunk of a stream at a time), a chunk
 * whose origin exists is not written again, and from workflow code the write's step is checkpointed
 * with it. Readers are told on STREAM_CHANNEL. $1 run, $2 epoch, $3 step seq or null, $4 step name,
 * $5 stream, $6 origin, $7 value (jsonb or null), $8 end marker. Returns held (0 = lease lost).
 */
const WRITE_CHUNK = statement(
  'write_stream_chunk',
  `
WITH run AS (
  -- The chunk's position is read here, not in the INSERT (Citus cannot plan that INSERT reading its own table).
  SELECT r.id, (SELECT coalesce(max(c.position) + 1, 0) FROM durable_stream_chunks c WHERE c.run_id = r.id AND c.stream = $5) AS pos
  FROM durable_runs r WHERE r.id = $1 AND r.lease_epoch = $2 AND r.status = 'RUNNING' FOR SHARE OF r),
step AS (
  INSERT INTO durable_steps (run_id, seq, name, status, output, attempts, started_at, finished_at)
  SELECT run.id, $3::int, $4, 'SUCCEEDED', NULL, 1, now(), now() FROM run WHERE $3::int IS NOT NULL
  ON CONFLICT (run_id, seq) DO NOTHING
  RETURNING run_id),
chunk AS (
  INSERT INTO durable_stream_chunks (run_id, stream, position, origin, value, is_end)
  SELECT run.id, $5, run.pos, $6, $7::jsonb, $8::boolean
  FROM run
  ON CONFLICT (run_id, origin) DO NOTHING
  RETURNING run_id)
SELECT (SELECT count(*) FROM run)::int AS held,
  (SELECT count(pg_notify('${STREAM_CHANNEL}', run_id)) FROM chunk)::int AS written`,
);

/**
 * One page of a stream from position $3 ($4 chunks at most), the run's status, and whether the
 * stream is closed (its last chunk is the end marker: nothing is written after it) — in one
 * snapshot, so a run seen ended has every chunk it wrote in the page or behind it. Primary key
 * (run_id, stream, position): an index range scan, and one backward step for the last chunk.
 */
const READ_CHUNKS = statement(
  'read_stream_chunks',
  `
SELECT (SELECT status FROM durable_runs WHERE id = $1) AS status,
  (SELECT is_end FROM durable_stream_chunks WHERE run_id = $1 AND stream = $2 ORDER BY position DESC LIMIT 1) AS closed,
  coalesce((SELECT json_agg(json_build_object('position', c.position, 'value', c.value, 'isEnd', c.is_end) ORDER BY c.position)
    FROM (SELECT position, value, is_end FROM durable_stream_chunks
          WHERE run_id = $1 AND stream = $2 AND position >= $3 ORDER BY position LIMIT $4) c), '[]'::json) AS chunks`,
);

/** The streams of a run: chunk count, ended, last write. */
const LIST_STREAMS = statement(
  'list_run_streams',
  `
SELECT stream, count(*) FILTER (WHERE NOT is_end)::int AS chunks, bool_or(is_end) AS ended, max(written_at) AS last_written_at
FROM durable_stream_chunks WHERE run_id = $1 GROUP BY stream ORDER BY stream LIMIT $2`,
);

/** Appends a chunk (see WRITE_CHUNK); false = the execution no longer holds the run. */
export async function writeChunk(store: Store, c: ChunkWrite): Promise<boolean> {
  if (store.sql.dialect === 'mysql') return mysql.writeChunk(store, c);
  store = runStore(store, c.runId);
  if (store.partition !== undefined) return partitioned.writeChunkInPartition(store, c);
  const [row] = await store.sql.query<{ held: number }>(WRITE_CHUNK, [
    c.runId,
    c.epoch,
    c.step?.seq ?? null,
    c.step?.name ?? null,
    c.stream,
    c.origin,
    c.value,
    c.isEnd,
  ]);
  return Number(row.held) === 1;
}

/** A page of a stream from `from` (see READ_CHUNKS). */
export async function readChunks(store: Store, runId: string, stream: string, from: number, limit: number): Promise<StreamPage> {
  if (store.sql.dialect === 'mysql') return mysql.readChunks(store, runId, stream, from, limit);
  store = runStore(store, runId);
  const [row] = await store.sql.query<{ status: RunStatus | null; closed: boolean | null; chunks: StoredChunk[] | string }>(READ_CHUNKS, [
    runId,
    stream,
    from,
    limit,
  ]);
  const chunks = typeof row.chunks === 'string' ? (JSON.parse(row.chunks) as StoredChunk[]) : row.chunks;
  return { status: row.status ?? null, closed: row.closed === true, chunks };
}

/** The run's streams (at most `limit`), by name. */
export async function listStreams(store: Store, runId: string, limit: number): Promise<StreamSummary[]> {
  if (store.sql.dialect === 'mysql') return mysql.listStreams(store, runId, limit);
  store = runStore(store, runId);
  const rows = await store.sql.query<{ stream: string; chunks: number; ended: boolean; last_written_at: Date }>(LIST_STREAMS, [
    runId,
    limit,
  ]);
  return rows.map((r) => ({
    stream: r.stream,
    chunks: Number(r.chunks),
    ended: r.ended === true,
    lastWrittenAt: new Date(r.last_written_at),
  }));
}
