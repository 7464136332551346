import { keyUsage, listQueueLimits } from '../store/flow-limits.js';
import type { QueueLimits } from '../engine/flow-control.js';
import type { AdminContext } from './admin-context.js';

/** Flow control: queues' cluster-wide limits and their usage, keyed runs, runtime limits. */
export class FlowAdmin {
  constructor(private readonly c: AdminContext) {}

  /** Every queue with cluster-wide limits (executing and due runs, rate window), debounced and singleton runs. */
  async overview() {
    return { queues: await listQueueLimits(this.c.store), ...(await this.c.engine.flowControl.keyedRuns()) };
  }

  /** The busiest concurrency keys of a queue: executing and due runs per key. */
  async keys(queue: string, limit: number) {
    return { queue, keys: await keyUsage(this.c.store, queue, limit) };
  }

  /** Sets a queue's limits at runtime (every instance follows at once). */
  async setLimits(queue: string, limits: QueueLimits) {
    return this.c.engine.flowControl.setQueueLimits(queue, limits);
  }

  /** Drops a runtime limit: back to what the options declare (limits null: none). */
  async resetLimits(queue: string) {
    return { queue, limits: await this.c.engine.flowControl.resetQueueLimits(queue) };
  }
}
