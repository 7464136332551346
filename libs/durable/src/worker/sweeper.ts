import { sweepExpiredLeases } from '../store/leases.js';
import { sweepDeadlines, sweepRateWindows, sweepRetention } from '../store/maintenance.js';
import type { Store } from '../store/store.js';
import type { ResolvedEngineOptions } from '../config/options.js';
import { OutageLog } from '../retry/outage-log.js';

/** Statements per sweep and task at most, so one sweep stays bounded however far behind it is. */
const MAX_BATCHES_PER_SWEEP = 20;

/**
 * Periodic maintenance, safe on every instance at once (each statement locks its rows with
 * SKIP LOCKED) and bounded (batches of sweepBatchSize, a capped number per sweep):
 * expired leases → claimable, passed deadlines → FAILED, finished runs past retention → deleted.
 */
export class Sweeper {
  private timer?: NodeJS.Timeout;
  private running = false;
  private current: Promise<void> = Promise.resolve();
  private readonly outage: OutageLog;

  constructor(
    private readonly store: Store,
    private readonly options: ResolvedEngineOptions,
  ) {
    this.outage = new OutageLog('sweeper', options.logger);
  }

  start(): void {
    this.running = true;
    this.schedule(Math.round(this.options.sweepIntervalMs * Math.random()));
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    await this.current;
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    this.timer = setTimeout(() => {
      this.current = this.sweepOnce()
        .then(() => undefined)
        .finally(() => this.schedule(Math.round(this.options.sweepIntervalMs * (0.8 + Math.random() * 0.4))));
    }, ms);
    this.timer.unref?.();
  }

  /** One sweep; returns what it did. */
  async sweepOnce(): Promise<{ expired: number; deadlines: number; compensating: number; deleted: number }> {
    const { sweepBatchSize: batch, retentionMs, logger } = this.options;
    const result = { expired: 0, deadlines: 0, compensating: 0, deleted: 0 };
    try {
      for (let i = 0; i < MAX_BATCHES_PER_SWEEP; i++) {
        const n = await sweepExpiredLeases(this.store, batch);
        result.expired += n;
        if (n < batch) break;
      }
      for (let i = 0; i < MAX_BATCHES_PER_SWEEP; i++) {
        const { failed, compensating } = await sweepDeadlines(this.store, batch);
        result.deadlines += failed.length;
        result.compensating += compensating.length;
        if (failed.length + compensating.length < batch) break;
      }
      if (retentionMs !== null) {
        for (let i = 0; i < MAX_BATCHES_PER_SWEEP; i++) {
          const n = await sweepRetention(this.store, retentionMs, batch);
          result.deleted += n;
          if (n < batch) break;
        }
      }
      await sweepRateWindows(this.store, batch);
      this.outage.ok();
    } catch (err) {
      this.outage.failed(err);
    }
    if (result.expired) logger.log(`sweeper: ${result.expired} run(s) with an expired lease made claimable again`);
    if (result.deadlines) logger.warn(`sweeper: ${result.deadlines} run(s) failed for passing their deadline`);
    if (result.compensating) {
      logger.warn(`sweeper: ${result.compensating} run(s) passed their deadline and compensate before they end FAILED`);
    }
    if (result.deleted) logger.debug?.(`sweeper: ${result.deleted} finished run(s) deleted (retention)`);
    return result;
  }
}
