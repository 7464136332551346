/** Measurements of the "ours" benchmark phases: run timings from durable_runs, and a measured window (CPU, statements). */
import { withClient, type DbStats } from '../db.js';
import { pgCpuDelta, snapshotPgCpu, type PgCpuSnapshot } from '../pg-cpu.js';
import type { Snap } from './ours-child.js';
import { addCounts, diffCounts, type OursHost, type StatementCounts } from './ours-lib.js';
import type { WorkerSet } from './ours-workers.js';

export interface Timing {
  created: number;
  started: number;
  finished: number;
  status: string;
}

export async function readTimings(url: string, prefix: string): Promise<Timing[]> {
  return withClient(url, async (c) => {
    const { rows } = await c.query(
      `SELECT status, extract(epoch FROM created_at) * 1000 AS c, extract(epoch FROM started_at) * 1000 AS s,
              extract(epoch FROM finished_at) * 1000 AS f
         FROM durable_runs WHERE id LIKE $1`,
      [`${prefix}%`],
    );
    return rows.map((r) => ({ status: r.status, created: Number(r.c), started: Number(r.s), finished: Number(r.f) }));
  });
}

export function checkTimings(name: string, rows: Timing[], n: number, notes: string[]): void {
  const bad = rows.filter((t) => t.status !== 'SUCCEEDED').length;
  if (rows.length !== n || bad > 0) notes.push(`WARNING: ${name}: ${rows.length} rows, ${bad} not SUCCEEDED`);
}

const cpuMsNow = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** A measured window: CPU of this process, of the worker processes and of Postgres; engine statements. */
export class Window {
  private nodeMs0 = 0;
  private pg0: PgCpuSnapshot = new Map();
  private snap0: Snap = { cpuMs: 0, counts: {}, userWrites: 0 };
  private client0: StatementCounts = {};
  private t0 = 0;
  constructor(
    private readonly ws: WorkerSet,
    private readonly client?: OursHost,
  ) {}
  async begin(): Promise<void> {
    this.snap0 = await this.ws.snap();
    this.client0 = { ...(this.client?.counts ?? {}) };
    this.nodeMs0 = cpuMsNow();
    this.pg0 = snapshotPgCpu();
    this.t0 = performance.now();
  }
  /**
   * Call before stopping anything (an exited backend loses its CPU figure). `starter`: what a
   * starter process spent in the window (its CPU and statements), added to the figures.
   */
  async end(dbName: string, n: number, starter?: Snap) {
    const wallS = (performance.now() - this.t0) / 1000;
    const nodeSelf = cpuMsNow() - this.nodeMs0;
    const pg1 = snapshotPgCpu();
    const snap1 = await this.ws.snap();
    const pgc = pgCpuDelta(this.pg0, pg1, dbName);
    const counts = diffCounts(snap1.counts, this.snap0.counts);
    if (this.client) addCounts(counts, diffCounts(this.client.counts, this.client0));
    if (starter) addCounts(counts, starter.counts);
    const nodeMs = nodeSelf + snap1.cpuMs - this.snap0.cpuMs + (starter?.cpuMs ?? 0);
    const pgMs = pgc.dbMs + pgc.auxMs;
    const perWf: Record<string, number> = {};
    for (const [k, v] of Object.entries(counts).sort((a, b) => b[1] - a[1])) perWf[k] = v / n;
    return {
      wallS,
      statementsPerWorkflow: perWf,
      statementsPerWorkflowTotal: Object.values(counts).reduce((a, b) => a + b, 0) / n,
      userWritesPerWorkflow: (snap1.userWrites - this.snap0.userWrites) / n,
      cpuMsPerWorkflow: { node: nodeMs / n, postgres: pgMs / n, total: (nodeMs + pgMs) / n },
      pgOtherMs: pgc.otherMs,
      pgDbMs: pgc.dbMs,
      pgAuxMs: pgc.auxMs,
    };
  }
}

export const dbDelta = (a: DbStats, b: DbStats, n: number) => ({
  commitsPerWorkflow: (b.xactCommit - a.xactCommit) / n,
  rowsWrittenPerWorkflow: (b.tupWritten - a.tupWritten) / n,
});
