import { RunNotFoundError } from '../errors/index.js';
import { FINISHED_STATUSES } from '../store/rows.js';
import { getResult } from '../store/runs.js';
import { listStreams, readChunks } from '../store/streams.js';
import { iso, type AdminContext } from './admin-context.js';

/** The streams a run writes (Durable.stream): which, and a page of one, as stored (no waiting: the dashboard refreshes). */
export class StreamsAdmin {
  constructor(private readonly c: AdminContext) {}

  /** The run's streams with their chunk counts; 404 for an unknown run. */
  async list(runId: string) {
    const streams = await listStreams(this.c.store, runId, 100);
    if (!streams.length && !(await getResult(this.c.store, runId))) throw new RunNotFoundError(runId);
    return { runId, streams: streams.map((s) => ({ ...s, lastWrittenAt: iso(s.lastWrittenAt) })) };
  }

  /** Up to `limit` chunks from position `from`; `ended` once the stream was closed or the run ended and nothing follows. */
  async page(runId: string, stream: string, from: number, limit: number) {
    const page = await readChunks(this.c.store, runId, stream, from, limit + 1);
    if (page.status === null) throw new RunNotFoundError(runId);
    const closed = page.chunks.some((c) => c.isEnd);
    const values = page.chunks.filter((c) => !c.isEnd);
    const chunks = values.slice(0, limit).map((c) => ({ position: c.position, value: c.value }));
    const more = values.length > limit;
    const last = chunks[chunks.length - 1];
    return {
      runId,
      stream,
      runStatus: page.status,
      chunks,
      nextFrom: last ? last.position + 1 : from,
      ended: !more && (closed || FINISHED_STATUSES.has(page.status)),
    };
  }
}
