import { leaseHeartbeat } from '../store/leases.js';
import type { HeldRun } from '../store/rows.js';
import { OutageLog } from '../retry/outage-log.js';
import type { ExecutionServices } from '../workflow/execution-services.js';

/** What the lease keeper needs from the worker whose leases it renews. */
export interface LeaseHolder {
  /** The runs executing here, with the epoch of their lease. */
  held(): HeldRun[];
  /** The run (under this epoch) lost its lease, unless its execution is giving it up itself right now. */
  lost(run: HeldRun): void;
  /** The run was asked to cancel with compensation (cancel(id, { compensate: true })). */
  cancelRequested(run: HeldRun): void;
  /** Every run executing here must stop: their leases may be gone. */
  lostAll(): void;
  /** Hands runs back so that another instance can claim them at once. */
  release(runs: HeldRun[]): Promise<number>;
}

/**
 * Keeps the leases of the runs executing in this process alive: one statement per heartbeat
 * extends all of them (on the LISTEN session while it is up). A run missing from the answer was
 * lost (swept, cancelled, claimed elsewhere) and stops; a heartbeat that fails or hangs past the
 * last confirmed lease stops every run; a process that was away past its leases (frozen, a long
 * pause) stops its runs and hands back those nobody took yet.
 */
export class LeaseKeeper {
  private timer?: NodeJS.Timeout;
  private running = false;
  private lastOk = Date.now();
  private readonly outage: OutageLog;

  constructor(
    private readonly holder: LeaseHolder,
    private readonly services: ExecutionServices,
  ) {
    this.outage = new OutageLog('lease heartbeat', services.options.logger);
  }

  start(): void {
    this.running = true;
    this.schedule();
  }

  stop(): void {
    this.running = false;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (!this.running) return;
    // Not unref'd: a running worker keeps its process alive. In a worker-only process (a Nest
    // application context) the database connections are the only other handles, and they all
    // close when Postgres restarts: the process would exit (code 0) in the middle of the outage.
    this.timer = setTimeout(() => void this.beat().finally(() => this.schedule()), this.services.options.heartbeatMs);
  }

  /** One statement extends every lease held here; runs missing from the answer stop. */
  private async beat(): Promise<void> {
    const { leaseMs, logger } = this.services.options;
    const held = this.holder.held();
    if (!held.length) {
      this.lastOk = Date.now();
      return;
    }
    const sentAt = Date.now();
    if (sentAt - this.lastOk > leaseMs) {
      // This process was away past its leases: another worker may own these runs by now. Stop
      // them, and hand back those nobody took yet so they are claimable at once.
      logger.warn(
        `no lease renewal for ${sentAt - this.lastOk} ms (lease ${leaseMs} ms): stopping ${held.length} run(s) and handing them back`,
      );
      this.holder.lostAll();
      await this.holder.release(held);
      this.lastOk = Date.now();
      return;
    }
    // A heartbeat that hangs (a network partition: no error, no answer) must not keep the runs
    // going past their leases: they stop when the last confirmed lease runs out.
    const watchdog = setTimeout(() => this.holder.lostAll(), Math.max(0, this.lastOk + leaseMs - sentAt));
    watchdog.unref?.();
    try {
      const kept = await leaseHeartbeat(this.services.leaseStore?.() ?? this.services.store, held, leaseMs);
      this.outage.ok();
      this.lastOk = sentAt; // the extended leases run from (no earlier than) the sending
      for (const h of held) {
        const k = kept.get(h.id);
        if (!k) this.holder.lost(h);
        else if (k.cancelling) this.holder.cancelRequested(h);
      }
    } catch (err) {
      this.outage.failed(err);
      // Our leases have expired by now: another worker may own these runs. Stop them.
      if (Date.now() - this.lastOk > leaseMs) this.holder.lostAll();
    } finally {
      clearTimeout(watchdog);
    }
  }
}
