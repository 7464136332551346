import { IdempotencyConflictError, InvalidArgumentError } from '../errors/index.js';
import { insertRun, insertRuns, runIdentities } from '../store/runs.js';
import type { NewRun } from '../store/rows.js';
import type { PrismaLike } from '../store/sql-client.js';
import { storeWithin, type Store } from '../store/store.js';
import type { EngineContext } from './engine-context.js';
import { buildNewRun } from './new-run.js';
import type { StartOptions, StartOutcome } from './start-options.js';
import { startKeyedRun } from './keyed-start.js';
import { startContext } from './start-context.js';
import { insertEachPartition, onceMoreAfterConnectionLoss } from './start-retry.js';

/** One run of startMany(): `{ workflow, input, options? }` (`{ name, input, opts? }` is accepted too). */
export type StartManyItem =
  | { workflow: string; input?: unknown; options?: Omit<StartOptions, 'tx'> }
  | { name: string; input?: unknown; opts?: Omit<StartOptions, 'tx'> };

/** The run a start() leads to, and how (a new run, or the existing one its id, dedupe key or debounce key led to). */
export interface StartedRun {
  id: string;
  workflowName: string;
  outcome: StartOutcome;
}

/** Starts one run (see StartOptions); returns the run as inserted (or as it already existed). */
export async function startRun(e: EngineContext, workflowName: string, input: unknown, opts: StartOptions): Promise<StartedRun> {
  const run = buildNewRun(e.registry, e.options, workflowName, input, opts);
  // The trace context of the caller (e.g. the HTTP request's span), stored only when there is one.
  run.traceparent = e.telemetry.tracing.activeTraceparent();
  run.context = startContext(e.options, run.workflowName, opts);
  if (run.dedupeKey !== undefined || run.debounce) {
    const started = await startKeyedRun(opts.tx ? storeWithin(e.store, opts.tx) : e.store, run);
    if (started.outcome === 'started') e.telemetry.metrics.runsStarted(run.workflowName, run.queue);
    return { ...started, workflowName: run.workflowName };
  }
  let outcome: StartOutcome = 'started';
  const immediate = !opts.tx && !opts.runAt && !opts.delayMs;
  if (immediate && e.worker.reserveSlot(run.queue)) {
    // In-process fast path: the row is inserted already leased to this worker, and executes now.
    let claimed;
    try {
      claimed = await e.starts.claimed(run);
    } catch (err) {
      e.worker.releaseSlot(run.queue);
      throw err;
    }
    if (claimed === 'queued') {
      // The queue has limits this process had not heard of yet: the run waits for the limited claim.
      e.worker.releaseSlot(run.queue);
      e.worker.refreshLimits();
    } else if (claimed) e.worker.execute(claimed, run.queue);
    else {
      e.worker.releaseSlot(run.queue);
      await checkExisting(e.store, [run]);
      outcome = 'existing';
    }
  } else if (immediate) {
    // Group commit with the other starts of this moment (outside a transaction: nobody else's commit to join).
    if (!(await e.starts.pending(run))) {
      await checkExisting(e.store, [run]);
      outcome = 'existing';
    }
  } else {
    const store = opts.tx ? storeWithin(e.store, opts.tx) : e.store;
    const insert = () => insertRun(store, run);
    // In the caller's transaction a lost connection is the caller's to handle (its whole transaction failed).
    if (!(await (opts.tx ? insert() : onceMoreAfterConnectionLoss(insert)))) {
      await checkExisting(store, [run]);
      outcome = 'existing';
    }
  }
  e.telemetry.metrics.runsStarted(run.workflowName, run.queue);
  return { id: run.id, workflowName: run.workflowName, outcome };
}

/** Starts many runs with one INSERT (optionally inside the caller's Prisma transaction). */
export async function startMany(e: EngineContext, items: StartManyItem[], opts: { tx?: PrismaLike }): Promise<NewRun[]> {
  if (!Array.isArray(items)) throw new InvalidArgumentError('startMany expects an array of { workflow, input, options? }.', 'items');
  if (!items.length) return [];
  const runs = items.map((it, i) => {
    const item = it as { workflow?: unknown; name?: unknown; input?: unknown; options?: StartOptions; opts?: StartOptions } | null;
    const name = item?.workflow ?? item?.name;
    if (typeof name !== 'string') throw new InvalidArgumentError(`startMany: item ${i} needs a "workflow" name.`, 'items');
    const runOpts = item!.options ?? item!.opts ?? {};
    const run = buildNewRun(e.registry, e.options, name, item!.input, runOpts);
    run.context = startContext(e.options, run.workflowName, runOpts);
    if (run.dedupeKey !== undefined || run.debounce) {
      throw new InvalidArgumentError(`startMany: item ${i} has a dedupeKey or debounce; start such runs one by one with start().`, 'items');
    }
    return run;
  });
  const ids = new Set<string>();
  for (const r of runs) {
    if (ids.has(r.id)) throw new InvalidArgumentError(`startMany: id "${r.id}" appears twice in one call.`, 'items');
    ids.add(r.id);
  }
  const traceparent = e.telemetry.tracing.activeTraceparent();
  if (traceparent) for (const r of runs) r.traceparent = traceparent;
  const store = opts.tx ? storeWithin(e.store, opts.tx) : e.store;
  const inserted = opts.tx
    ? await insertRuns(store, runs, e.options.appVersion)
    : new Set(await insertEachPartition(store, runs, (s, group) => insertRuns(s, group, e.options.appVersion)));
  if (e.telemetry.metrics.enabled) for (const r of runs) if (inserted.has(r.id)) e.telemetry.metrics.runsStarted(r.workflowName, r.queue);
  const existing = runs.filter((r) => !inserted.has(r.id));
  if (existing.length) await checkExisting(store, existing);
  return runs;
}

/** Runs whose id existed already: the same workflow is an idempotent start; another one is a conflict. */
async function checkExisting(store: Store, runs: NewRun[]): Promise<void> {
  const found = await runIdentities(
    store,
    runs.map((r) => r.id),
  );
  for (const r of runs) {
    const f = found.get(r.id);
    if (f && f.workflowName !== r.workflowName) throw new IdempotencyConflictError(r.id, f.workflowName, r.workflowName);
  }
}
