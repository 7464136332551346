/** Streams on a MySQL-family database (see streams.ts). */
import type { ChunkWrite, RunStatus, StreamPage, StreamSummary } from '../rows.js';
import type { Store } from '../store.js';
import { holds, insertEmptyStep } from './messages.js';
import { bool, date, isDuplicateKey, json, NOW } from './sql.js';

/** See writeChunk() in streams.ts: fenced (a shared lock on the run row), the step and the chunk in one transaction. */
export async function writeChunk(store: Store, c: ChunkWrite): Promise<boolean> {
  return store.sql.transaction(async (sql) => {
    if (!(await holds(sql, c.runId, c.epoch))) return false;
    if (c.step) await insertEmptyStep(sql, c.runId, c.step.seq, c.step.name);
    const [dup] = await sql.query('SELECT 1 AS x FROM durable_stream_chunks WHERE run_id = ? AND origin = ?', [c.runId, c.origin]);
    if (dup) return true;
    const [last] = await sql.query<{ p: number | null }>(
      'SELECT MAX(position) AS p FROM durable_stream_chunks WHERE run_id = ? AND stream = ?',
      [c.runId, c.stream],
    );
    try {
      await sql.execute(
        `INSERT INTO durable_stream_chunks (run_id, stream, position, origin, value, is_end, written_at) VALUES (?, ?, ?, ?, ?, ?, ${NOW})`,
        [c.runId, c.stream, last?.p == null ? 0 : Number(last.p) + 1, c.origin, c.value, c.isEnd ? 1 : 0],
      );
    } catch (err) {
      // The same origin written meanwhile (a replay racing a zombie that still held the run): stored once. Any other clash is an error.
      if (!isDuplicateKey(err) || !String((err as Error).message).includes('durable_stream_chunks_origin_key')) throw err;
    }
    return true;
  });
}

/** See readChunks() in streams.ts: the run's status first, so a run seen ended has all its chunks committed before the read. */
export async function readChunks(store: Store, runId: string, stream: string, from: number, limit: number): Promise<StreamPage> {
  const [run] = await store.sql.query<{ status: RunStatus }>('SELECT status FROM durable_runs WHERE id = ?', [runId]);
  const rows = await store.sql.query<{ position: number; value: unknown; is_end: unknown }>(
    'SELECT position, value, is_end FROM durable_stream_chunks WHERE run_id = ? AND stream = ? AND position >= ? ORDER BY position LIMIT ?',
    [runId, stream, from, limit],
  );
  const [last] = await store.sql.query<{ is_end: unknown }>(
    'SELECT is_end FROM durable_stream_chunks WHERE run_id = ? AND stream = ? ORDER BY position DESC LIMIT 1',
    [runId, stream],
  );
  return {
    status: run?.status ?? null,
    closed: last !== undefined && bool(last.is_end),
    chunks: rows.map((r) => ({ position: Number(r.position), value: json(r.value), isEnd: bool(r.is_end) })),
  };
}

/** See listStreams() in streams.ts. */
export async function listStreams(store: Store, runId: string, limit: number): Promise<StreamSummary[]> {
  const rows = await store.sql.query<{ stream: string; chunks: unknown; ended: unknown; last_written_at: Date | string }>(
    `SELECT stream, SUM(is_end = 0) AS chunks, MAX(is_end) AS ended, MAX(written_at) AS last_written_at
     FROM durable_stream_chunks WHERE run_id = ? GROUP BY stream ORDER BY stream LIMIT ?`,
    [runId, limit],
  );
  return rows.map((r) => ({
    stream: r.stream,
    chunks: Number(r.chunks),
    ended: Number(r.ended) === 1,
    lastWrittenAt: date(r.last_written_at) as Date,
  }));
}
