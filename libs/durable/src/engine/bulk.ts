import { InvalidArgumentError, DurableError } from '../errors/index.js';
import { listRuns, countByStatus, COUNT_CAP, type RunFilter } from '../store/admin-list.js';
import { deleteFinishedRuns } from '../store/bulk.js';
import { dbNow } from '../store/schedules.js';
import { RUN_STATUSES, type RunStatus } from '../store/rows.js';
import type { EngineContext } from './engine-context.js';
import { actorOf, cancel, resume } from './run-control.js';

/**
 * What a bulk action does to each run its filter selects, with the same semantics as the
 * single-run operation: `cancel` (an unfinished run, its children per cancelChildren; optionally
 * with compensation), `resume` (a FAILED or CANCELLED run from its last checkpoint), `retry` (a
 * FAILED run from its failed step: resume restricted to FAILED) and `delete` (a finished run with
 * its steps, messages, events and history).
 */
export type BulkAction = 'cancel' | 'resume' | 'retry' | 'delete';
export const BULK_ACTIONS: readonly BulkAction[] = ['cancel', 'resume', 'retry', 'delete'];

/** The statuses each action applies to; the filter's own statuses narrow them further. */
export const BULK_STATUSES: Record<BulkAction, readonly RunStatus[]> = {
  cancel: ['PENDING', 'RUNNING', 'WAITING'],
  resume: ['FAILED', 'CANCELLED'],
  retry: ['FAILED'],
  delete: ['SUCCEEDED', 'FAILED', 'CANCELLED'],
};

/** Most runs one batch acts on. */
export const MAX_BULK_BATCH = 1000;

/** Where a bulk action is: the runs created before `asOf` (the dry run's clock), after `cursor` in (created_at, id) order. */
export interface BulkPosition {
  asOf: Date;
  cursor: { at: Date; id: string } | null;
}

export interface BulkBatchResult {
  /** Runs the action changed (for cancel: cancelled, or cancelling with compensation). */
  done: string[];
  /** Runs selected but left as they were (their status changed meanwhile), with the reason. */
  skipped: Array<{ id: string; reason: string }>;
  /** Where the next batch starts; null when this batch was the last. */
  next: BulkPosition | null;
}

/** The filter a bulk action really applies: the action's statuses, runs created before `asOf`. */
export function bulkFilter(action: BulkAction, filter: RunFilter, asOf: Date): RunFilter | null {
  const allowed = BULK_STATUSES[action];
  const statuses = (filter.statuses ?? RUN_STATUSES).filter((s) => allowed.includes(s));
  if (!statuses.length) return null;
  const createdTo = filter.createdTo && filter.createdTo < asOf ? filter.createdTo : asOf;
  return { ...filter, statuses, createdTo };
}

/** How many runs the action would touch now (per status, each capped at COUNT_CAP), pinned to the database clock. */
/** What a bulk action's dry run found. */
export interface BulkCount {
  /** The database time of the count: runs created later are never touched by this action. */
  asOf: Date;
  matched: number;
  /** A status had more than COUNT_CAP matching runs: `matched` is a lower bound. */
  capped: boolean;
  byStatus: Partial<Record<RunStatus, number>>;
}

export async function bulkCount(e: EngineContext, action: BulkAction, filter: RunFilter): Promise<BulkCount> {
  checkAction(action);
  const asOf = new Date(await dbNow(e.store));
  const f = bulkFilter(action, filter, asOf);
  if (!f) return { asOf, matched: 0, capped: false, byStatus: {} };
  const counts = await countByStatus(e.store, f, COUNT_CAP);
  const byStatus: Partial<Record<RunStatus, number>> = {};
  let matched = 0;
  let capped = false;
  for (const s of f.statuses!) {
    byStatus[s] = Math.min(counts[s], COUNT_CAP);
    matched += byStatus[s]!;
    if (counts[s] > COUNT_CAP) capped = true;
  }
  return { asOf, matched, capped, byStatus };
}

/**
 * One bounded batch: the next `limit` runs the filter selects (oldest first), each given to the
 * single-run operation (delete: one statement for the batch). Runs whose status changed since
 * they were selected are skipped, never forced.
 */
export async function bulkBatch(
  e: EngineContext,
  action: BulkAction,
  filter: RunFilter,
  at: BulkPosition,
  opts: { limit: number; compensate?: boolean; actor?: string },
): Promise<BulkBatchResult> {
  checkAction(action);
  actorOf(`bulk ${action}`, opts); // a bad actor is refused once, not as a reason to skip every run
  if (!Number.isInteger(opts.limit) || opts.limit < 1 || opts.limit > MAX_BULK_BATCH) {
    throw new InvalidArgumentError(`bulk batch size must be an integer between 1 and ${MAX_BULK_BATCH} (got ${opts.limit}).`, 'batchSize');
  }
  const f = bulkFilter(action, filter, at.asOf);
  if (!f) return { done: [], skipped: [], next: null };
  const runs = await listRuns(e.store, f, 'created', 'asc', at.cursor, opts.limit);
  const ids = runs.map((r) => r.id);
  const done: string[] = [];
  const skipped: Array<{ id: string; reason: string }> = [];
  if (action === 'delete') {
    const deleted = new Set(await deleteFinishedRuns(e.store, ids));
    for (const id of ids) {
      if (deleted.has(id)) done.push(id);
      else skipped.push({ id, reason: 'not finished any more, or locked by another statement' });
    }
  } else {
    for (const id of ids) {
      try {
        if (action === 'cancel') await cancel(e, id, { compensate: opts.compensate === true, actor: opts.actor });
        else await resume(e, id, { actor: opts.actor });
        done.push(id);
      } catch (err) {
        if (!(err instanceof DurableError)) throw err;
        skipped.push({ id, reason: err.message });
      }
    }
  }
  const last = runs[runs.length - 1];
  const next = runs.length < opts.limit || !last ? null : { asOf: at.asOf, cursor: { at: new Date(last.createdAt), id: last.id } };
  return { done, skipped, next };
}

function checkAction(action: BulkAction): void {
  if (!BULK_ACTIONS.includes(action)) {
    throw new InvalidArgumentError(
      `bulk action must be one of ${BULK_ACTIONS.join(', ')} (got ${JSON.stringify(action)?.slice(0, 40)}).`,
      'action',
    );
  }
}

/** A filter for DurableEngine.bulk (every field optional; absent = no condition). */
export type BulkFilter = Partial<RunFilter>;

/** Options of DurableEngine.bulk. */
export interface BulkOptions {
  /** Runs per batch (1..1000, default 200). */
  batchSize?: number;
  /** cancel only: undo what each run's steps did first (see CancelOptions.compensate). */
  compensate?: boolean;
  /** Who acts, recorded in each changed run's history (as CancelOptions.actor); e.g. 'ops:alice'. */
  actor?: string;
  /** Called after each batch with the running totals (progress). */
  onBatch?: (progress: { done: number; skipped: number; matched: number }) => void;
}

/** What DurableEngine.bulk did: how many runs matched at the start, were changed, were skipped. */
export interface BulkResult {
  action: BulkAction;
  matched: number;
  done: number;
  skipped: number;
}

/** Every run the filter selects now (created before this call), in bounded batches. */
export async function bulkAll(e: EngineContext, action: BulkAction, filter: BulkFilter, opts: BulkOptions = {}): Promise<BulkResult> {
  const f = completeFilter(filter);
  const { asOf, matched } = await bulkCount(e, action, f);
  let at: BulkPosition | null = { asOf, cursor: null };
  const total = { done: 0, skipped: 0, matched };
  while (at) {
    const r: BulkBatchResult = await bulkBatch(e, action, f, at, {
      limit: opts.batchSize ?? 200,
      compensate: opts.compensate,
      actor: opts.actor,
    });
    total.done += r.done.length;
    total.skipped += r.skipped.length;
    opts.onBatch?.({ ...total });
    at = r.next;
  }
  return { action, ...total };
}

/** A partial filter with every absent field null (no condition). */
export function completeFilter(f: BulkFilter): RunFilter {
  return {
    statuses: f.statuses ?? null,
    workflows: f.workflows ?? null,
    queues: f.queues ?? null,
    createdFrom: f.createdFrom ?? null,
    createdTo: f.createdTo ?? null,
    finishedFrom: f.finishedFrom ?? null,
    finishedTo: f.finishedTo ?? null,
    idPrefix: f.idPrefix ?? null,
    parentId: f.parentId ?? null,
    tags: f.tags ?? null,
    input: f.input ?? null,
    ids: f.ids ?? null,
  };
}
