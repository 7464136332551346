import { OutageLog } from '../retry/outage-log.js';
import type { ResolvedEngineOptions } from '../config/options.js';
import { claimLimited } from '../store/flow-claim.js';
import { limitedQueues } from '../store/flow-limits.js';
import { claim } from '../store/leases.js';
import type { ClaimedRun } from '../store/rows.js';
import type { Store } from '../store/store.js';

/**
 * Which queues have cluster-wide limits (durable_queue_limits), as this process last read them: a
 * limited queue is claimed under its limits row's lock (store/flow-claim.ts) and never takes the
 * in-process start path. Read at start, when an instance announces a change (LISTEN), and every
 * sweepIntervalMs. Until this process hears of a new limit, the plain claim's guard claims nothing
 * from that queue, so a stale list delays its runs but never lets them past the limit.
 */
export class FlowGate {
  private limited = new Set<string>();
  private timer?: NodeJS.Timeout;
  private refreshing: Promise<void> | null = null;
  /** A database outage fails every refresh (one per sweep interval): logged once per outage. */
  private readonly outage: OutageLog;

  constructor(
    private readonly store: Store,
    private readonly options: ResolvedEngineOptions,
    /** Called after a refresh with the queues whose state changed. */
    private readonly changed: (queues: string[]) => void,
  ) {
    this.outage = new OutageLog('reading the queue limits (the last ones read stay in force)', options.logger);
  }

  isLimited(queue: string): boolean {
    return this.limited.has(queue);
  }

  async start(): Promise<void> {
    await this.refresh();
    const tick = () => {
      this.timer = setTimeout(() => void this.refresh().finally(tick), this.options.sweepIntervalMs);
      this.timer.unref?.();
    };
    tick();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * Re-reads the limited queues now: a read already in flight may predate what the caller saw (a
   * start found a limit this process had not heard of), so a new read follows it.
   */
  refreshNow(): Promise<void> {
    return (this.refreshing ?? Promise.resolve()).then(() => this.refresh());
  }

  /** Re-reads the limited queues (one small query; concurrent calls share it). Never throws. */
  refresh(): Promise<void> {
    this.refreshing ??= limitedQueues(this.store)
      .then(
        (now) => {
          this.outage.ok();
          const changed = [...now].filter((q) => !this.limited.has(q)).concat([...this.limited].filter((q) => !now.has(q)));
          this.limited = now;
          if (changed.length) this.changed(changed);
        },
        (err) => this.outage.failed(err),
      )
      .finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  /** Claims through the path the queue's limits call for. */
  async claim(queue: string, want: number, owner: string, workflows: string[]): Promise<ClaimedRun[]> {
    const request = { queue, limit: want, owner, leaseMs: this.options.leaseMs, workflows, versions: this.options.runVersions };
    if (!this.limited.has(queue)) return claim(this.store, request);
    const r = await claimLimited(this.store, request);
    if (!r.limited) void this.refresh(); // the limits were removed: back to the plain claim
    return r.runs;
  }
}
