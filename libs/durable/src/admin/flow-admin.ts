import { keyUsage, listQueueLimits } from '../store/flow-limits.js';
import type { QueueLimits } from '../engine/flow-control.js';
import type { AdminContext } from './admin-context.js';
import { AdminParamError } from './param-error.js';

const LIMIT_FIELDS = ['globalConcurrency', 'keyConcurrency', 'rateLimit', 'keyRateLimit'] as const;

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

  /**
   * Changes the limits given in `changes` (null removes one; the others stay as they are) at
   * runtime; every instance follows at once. A queue that no workflow of this instance uses (and
   * that the options do not name) is refused unless `force`: a typo would otherwise set limits
   * nothing ever reads.
   */
  async setLimits(queue: string, changes: QueueLimits, force = false) {
    const known = this.knownQueues();
    if (!force && !known.includes(queue)) {
      throw new AdminParamError(
        'queue',
        `no workflow of this instance uses queue ${JSON.stringify(queue)} (known queues: ${known.join(', ') || 'none'}); ` +
          'check the name, or add ?force=true to set limits for it anyway',
      );
    }
    const current = (await listQueueLimits(this.c.store)).find((l) => l.queue === queue);
    const limits = Object.fromEntries(LIMIT_FIELDS.map((k) => [k, k in changes ? changes[k] : (current?.[k] ?? null)])) as QueueLimits;
    return this.c.engine.flowControl.setQueueLimits(queue, limits);
  }

  /** Drops a runtime limit: back to what the options declare (limits null: none). */
  async resetLimits(queue: string) {
    return { queue, limits: await this.c.engine.flowControl.resetQueueLimits(queue) };
  }

  /** Queues of the registered workflows and of the `queues` option, sorted. */
  knownQueues(): string[] {
    const { registry, options } = this.c.engine;
    return [...new Set([...registry.all().map((d) => d.queue), ...Object.keys(options.queues)])].sort();
  }
}
