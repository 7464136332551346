import { finishRuns, insertSteps, type EndResult } from '../store/checkpoints.js';
import type { RunEnd, StepCheckpoint } from '../store/rows.js';
import type { Store } from '../store/store.js';
import type { ExecutionWrites } from '../workflow/execution-services.js';

/**
 * Group commit for the writes executions make (step checkpoints, run ends) and for starts: a write
 * is sent at once when no statement is in flight; otherwise it waits for the one in flight and goes
 * with every other write that queued meanwhile, in one statement (one round trip, one commit). An
 * idle system pays no delay; a busy one sends fewer, larger statements, and each statement has a
 * fixed cost (Postgres plans and starts every part of it) that a busy server pays in CPU.
 * A second statement (up to `maxInFlight`) goes out only once the one in flight has taken longer
 * than `stalledMs`: it waits for a row lock, or the server is slow, and the writes behind it do not
 * wait for it (another run's end is not held back by a lock on this one).
 * When a statement returns, the queue goes out at the end of that turn of the event loop, with
 * the writes its callers make as they resume: sent at once, the queue went without them, and the
 * callers that wrote together split for good into groups that each take their own statement
 * (ten callers starting one by one: twice the statements per run, in about half of the runs).
 */
export class WriteBatcher<I, R> {
  private queue: Array<{ item: I; resolve: (r: R) => void; reject: (e: unknown) => void }> = [];
  /** When each statement in flight was sent (performance.now()), oldest first. */
  private readonly sentAt: number[] = [];
  private scheduled = false;
  private stallTimer: NodeJS.Timeout | null = null;

  constructor(
    /** Writes a batch in one statement; returns one result per item, in order. */
    private readonly flush: (items: I[]) => Promise<R[]>,
    private readonly maxInFlight = 2,
    private readonly maxBatch = 256,
    private readonly stalledMs = STALLED_MS,
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

  /** How long until the oldest statement in flight counts as stalled (0: it does, or none is in flight). */
  private untilStalled(): number {
    return this.sentAt.length ? Math.max(0, this.sentAt[0] + this.stalledMs - performance.now()) : 0;
  }

  private pump(): void {
    while (this.queue.length && this.sentAt.length < this.maxInFlight && this.untilStalled() === 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      const sent = performance.now();
      this.sentAt.push(sent);
      this.flush(batch.map((b) => b.item))
        .then(
          (results) => batch.forEach((b, i) => b.resolve(results[i])),
          (err) => batch.forEach((b) => b.reject(err)),
        )
        .finally(() => {
          this.sentAt.splice(this.sentAt.indexOf(sent), 1);
          // Not at once: the writes this batch's own callers make next (a caller's next start, a run's
          // next checkpoint) come in the microtasks that follow, and go with those that queued meanwhile.
          if (this.queue.length) this.schedule();
        });
    }
    // Writes wait behind a statement in flight: if it stalls, the next one goes without it.
    if (this.queue.length && this.sentAt.length < this.maxInFlight && !this.stallTimer) {
      this.stallTimer = setTimeout(() => {
        this.stallTimer = null;
        this.pump();
      }, this.untilStalled());
      this.stallTimer.unref?.();
    }
  }
}

/**
 * A statement in flight this long waits for something (a row lock, a slow server) rather than
 * working: the writes queued behind it go in a statement of their own. Statements of a busy
 * worker take a few milliseconds; a lock wait takes as long as the transaction holding the lock.
 */
const STALLED_MS = 20;

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
