/** The client's side of backfills (workflow/backfill.ts): pause, resume, and the list with progress. */
import { decode } from '../codec/codec.js';
import { IllegalTransitionError, InvalidArgumentError, RunNotFoundError } from '../errors/index.js';
import { BACKFILL_CONTROL_TOPIC, listBackfills } from '../store/backfills.js';
import { runStatus } from '../store/runs.js';
import type { Store } from '../store/store.js';
import type { BackfillProgress } from '../workflow/backfill.js';
import type { EngineContext } from './engine-context.js';
import { send } from './queries.js';

/** A backfill as engine.backfills() lists it: its run, progress, rate and time left. */
export interface BackfillView {
  runId: string;
  workflowName: string;
  status: string;
  createdAt: Date;
  finishedAt: Date | null;
  done: number;
  estimated: number | null;
  batches: number;
  dryRun: boolean;
  paused: boolean;
  /** Rows per second since it began (as of its latest report). */
  rowsPerSecond: number | null;
  /** Seconds left at that rate (null without an estimate or a rate). */
  etaSeconds: number | null;
  /** When it last reported progress (at most a second apart while it works). */
  reportedAt: Date;
}

/** Asks a backfill's run to pause after its current batch, or to go on; RunNotFoundError / IllegalTransitionError otherwise. */
export async function controlBackfill(e: EngineContext, runId: string, action: 'pause' | 'resume'): Promise<void> {
  const status = await runStatus(e.store, runId);
  if (!status) throw new RunNotFoundError(runId);
  if (status !== 'PENDING' && status !== 'RUNNING' && status !== 'WAITING') {
    throw new IllegalTransitionError(runId, status, `${action} the backfill of`, ['PENDING', 'RUNNING', 'WAITING']);
  }
  await send(e, runId, BACKFILL_CONTROL_TOPIC, { action }, {});
}

/** The newest backfills (runs whose workflow called Durable.backfill), newest first. */
export async function backfills(store: Store, limit = 100): Promise<BackfillView[]> {
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new InvalidArgumentError(`limit must be an integer from 1 to 1000 (got ${JSON.stringify(limit)}).`, 'limit');
  }
  const rows = await listBackfills(store, limit);
  return rows.map((r) => {
    const p = decode(r.progress) as BackfillProgress;
    const seconds = (p.at - p.startedAt) / 1000;
    const rate = seconds > 0 ? p.done / seconds : null;
    const left = p.estimated === null ? null : Math.max(0, p.estimated - p.done);
    return {
      runId: r.runId,
      workflowName: r.workflowName,
      status: r.status,
      createdAt: r.createdAt,
      finishedAt: r.finishedAt,
      done: p.done,
      estimated: p.estimated,
      batches: p.batches,
      dryRun: p.dryRun,
      paused: p.paused && !p.finished && (r.status === 'PENDING' || r.status === 'RUNNING' || r.status === 'WAITING'),
      rowsPerSecond: rate === null ? null : Math.round(rate * 10) / 10,
      etaSeconds: p.finished ? 0 : left !== null && rate ? Math.round(left / rate) : null,
      reportedAt: r.updatedAt,
    };
  });
}
