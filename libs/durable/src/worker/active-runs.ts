import type { ClaimedRun, HeldRun } from '../store/rows.js';
import type { RunContext, StopReason } from '../workflow/run-context.js';
import type { ExecutionOutcome } from './executor.js';
import type { QueueState } from './queue-state.js';

/** A run executing in this worker. */
export interface ActiveRun {
  run: ClaimedRun;
  ctx: RunContext;
  queue: QueueState;
  done: Promise<ExecutionOutcome>;
}

/** The runs executing in this worker, by run id, and what the worker tells all of them at once. */
export class ActiveRuns extends Map<string, ActiveRun> {
  /** The leases they hold (the heartbeat renews them; a shutdown hands them back). */
  held(): HeldRun[] {
    return [...this.values()].map((a) => ({ id: a.run.id, epoch: a.run.epoch }));
  }

  /** How many run in each of `queues` (the metrics' active-runs gauge). */
  byQueue(queues: Iterable<string>): Map<string, number> {
    const byQueue = new Map<string, number>([...queues].map((q) => [q, 0]));
    for (const a of this.values()) byQueue.set(a.queue.name, (byQueue.get(a.queue.name) ?? 0) + 1);
    return byQueue;
  }

  stopAll(reason: StopReason): void {
    for (const a of this.values()) a.ctx.stop(reason);
  }
}
