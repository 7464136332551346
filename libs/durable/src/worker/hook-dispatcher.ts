import { errorText } from '../errors/error-text.js';
import type { ResolvedEngineOptions } from '../config/options.js';
import { EVENT_KINDS, eventTypeOf, type DurableLifecycleEvent, type HookConsumer } from '../definitions/hooks.js';
import { OutageLog } from '../retry/outage-log.js';
import { advanceHookCursor, ensureHookCursor, readHookEvents, releaseHookCursor } from '../store/hook-cursors.js';
import type { Store } from '../store/store.js';

/**
 * Delivers lifecycle events to the registered consumers: each has a loop of its own that reads the
 * run history after its cursor (one statement, which also renews its lease), calls the handler for
 * each event in order, then moves the cursor past what was delivered. The engine never waits for
 * it: the history rows are written by the engine's own statements, and a slow or failing handler
 * only holds up its own consumer. A handler that throws gets the same event again at the next look
 * (the cursor stays before it); a crash between delivery and the cursor's move delivers again.
 */
export class HookDispatcher {
  private running = false;
  private readonly loops: Promise<void>[] = [];
  private readonly wakeups = new Set<() => void>();

  constructor(
    private readonly store: Store,
    private readonly options: ResolvedEngineOptions,
    private readonly consumers: readonly HookConsumer[],
  ) {}

  /**
   * Places every new consumer's cursor before it resolves, so that a consumer gets every event of
   * a run started after engine.start() resolved (a cursor placed later would skip them).
   */
  async start(): Promise<void> {
    if (this.running || !this.consumers.length) return;
    await Promise.all(this.consumers.map((c) => ensureHookCursor(this.store, c.consumer)));
    this.running = true;
    for (const c of this.consumers) this.loops.push(this.loop(c));
  }

  /**
   * Stops looking; a handler still running may finish within shutdownGraceMs (its cursor then
   * moves). After that the leases are given up anyway: another instance delivers what is left.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const w of this.wakeups) w();
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((r) => (timer = setTimeout(r, this.options.shutdownGraceMs)));
    await Promise.race([Promise.all(this.loops.splice(0)), grace]);
    clearTimeout(timer);
    const owner = this.options.workerId;
    await Promise.all(this.consumers.map((c) => releaseHookCursor(this.store, c.consumer, owner).catch(() => {})));
  }

  private async loop(c: HookConsumer): Promise<void> {
    const { hooks, workerId, logger } = this.options;
    const outage = new OutageLog(`lifecycle hooks of consumer "${c.consumer}"`, logger);
    const kinds = [...c.types].map((t) => EVENT_KINDS[t]);
    while (this.running) {
      let full = false;
      try {
        full = await this.round(c, kinds, workerId);
        outage.ok();
      } catch (err) {
        outage.failed(err);
      }
      if (this.running && !full) await this.sleep(outage.backoffMs() || hooks.pollIntervalMs);
    }
  }

  /** One look: read, deliver in order, move the cursor. True when the batch was full (look again at once). */
  private async round(c: HookConsumer, kinds: string[], owner: string): Promise<boolean> {
    const { hooks, logger } = this.options;
    const batch = await readHookEvents(this.store, {
      consumer: c.consumer,
      owner,
      leaseMs: hooks.leaseMs,
      settleMs: hooks.settleMs,
      limit: hooks.batchSize,
      kinds,
    });
    if (!batch.held || batch.upto === null) return false;
    let delivered = batch.upto;
    for (const row of batch.events) {
      const type = eventTypeOf(row.kind)!;
      const event: DurableLifecycleEvent = {
        type,
        id: row.id,
        runId: row.runId,
        workflowName: row.workflow,
        at: new Date(row.at),
        detail: row.detail,
      };
      try {
        if (!this.running) throw new Error('shutting down');
        await c.handler(event);
      } catch (err) {
        if (this.running) {
          logger.error(
            `lifecycle hook "${c.consumer}" failed on ${type} of run ${row.runId} (${row.workflow ?? 'deleted run'}), event ${row.id}: ` +
              `${errorText(err)}; it gets the event again in ${hooks.pollIntervalMs} ms`,
          );
        }
        delivered = previousId(row.id);
        break;
      }
    }
    if (BigInt(delivered) > 0n) await advanceHookCursor(this.store, c.consumer, owner, delivered);
    return delivered === batch.upto && batch.read >= hooks.batchSize;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.wakeups.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      t.unref?.();
      this.wakeups.add(done);
    });
  }
}

/** The id just before `id` (history ids are bigint text). */
const previousId = (id: string): string => (BigInt(id) - 1n).toString();
