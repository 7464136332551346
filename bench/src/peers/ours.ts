/**
 * PLACEHOLDER — "ours" (nestjs-durable) is not wired into the benchmark yet.
 *
 * To wire it: implement runOurs() so it runs the same workload as
 * peers/dbos.ts (N workflows x k trivial steps, optional one-row INSERT per
 * step, payload = workflow input string of payloadBytes, `concurrency`
 * workflows at once per worker, `workers` worker processes) on a freshly
 * recreated database (db.ts recreateDatabase), and fill every PeerFigures
 * field with the definitions in figures.ts: saturation = drain of a
 * pre-filled queue; end-to-end = one sequential enqueuer while workers run
 * (CPU, commits, rows, latencies come from this phase); idle probe enqueued
 * from another process so the notify path is measured.
 * main.ts catches the error below and prints "n/a" for ours.
 */
import type { PeerFigures, RunOpts } from '../figures.js';

export interface OursOpts extends RunOpts {
  /** Number of worker processes. */
  workers: number;
  idleRuns?: number;
  log?: (msg: string) => void;
}

export async function runOurs(_opts: OursOpts): Promise<PeerFigures> {
  throw new Error('ours: not wired yet');
}
