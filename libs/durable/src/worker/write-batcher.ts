import { finishRuns, insertSteps, type EndResult } from '../store/checkpoints.js';
import type { RunEnd, StepCheckpoint } from '../store/rows.js';
import type { Store } from '../store/store.js';
import type { ExecutionWrites } from '../workflow/execution-services.js';

/**
 * Group commit for the writes executions make (step checkpoints, run ends): a write is sent at
 * once when fewer than `maxInFlight` statements are in flight; otherwise it waits for one of
 * them and goes with every other write that queued meanwhile, in one statement (one round
 * trip, one commit). An idle system pays no delay; a busy one sends fewer, larger statements.
 * When a statement returns, the queue goes out at the end of that turn of the event loop, with
 * the writes its callers make as they resume: sent at once, the queue went without them, and the
 * callers that wrote together split for good into groups that each take their own statement
 * (ten callers starting one by one: twice the statements per run, in about half of the runs).
 */
export class WriteBatcher<I, R> {
  private queue: Array<{ item: I; resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    /** Writes a batch in one statement; returns one result per item, in order. */
    private readonly flush: (items: I[]) => Promise<R[]>,
    private readonly maxInFlight = 2,
    private readonly maxBatch = 256,
  ) {}

  add(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (!this.scheduled) {
      // Writes that become ready in the same turn of the event loop go together.
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.pump();
      });
    }
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      this.flush(batch.map((b) => b.item))
        .then(
          (results) => batch.forEach((b, i) => b.resolve(results[i])),
          (err) => batch.forEach((b) => b.reject(err)),
        )
        .finally(() => {
          this.inFlight--;
          // Not at once: the writes this batch's own callers make next (a caller's next start, a run's
          // next checkpoint) come in the microtasks that follow, and go with those that queued meanwhile.
          if (this.queue.length) this.schedule();
        });
    }
  }
}

/** Step checkpoints and run ends of concurrent executions, written with group commit. */
export function groupedWrites(store: Store): ExecutionWrites {
  const steps = new WriteBatcher<StepCheckpoint, boolean>(async (items) => {
    const written = await insertSteps(store, items);
    return items.map((s) => written.has(`${s.runId}:${s.seq}`));
  });
  const ends = new WriteBatcher<RunEnd, EndResult>(async (items) => {
    const ended = await finishRuns(store, items);
    return items.map((e) => ended.get(e.runId) ?? 'lost');
  });
  return { step: (s) => steps.add(s), end: (e) => ends.add(e) };
}
