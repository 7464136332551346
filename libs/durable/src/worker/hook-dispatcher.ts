import { errorText } from '../errors/error-text.js';
import type { ResolvedEngineOptions } from '../config/options.js';
import { EVENT_KINDS, eventTypeOf, type DurableLifecycleEvent, type HookConsumer } from '../definitions/hooks.js';
import { OutageLog } from '../retry/outage-log.js';
import { advanceHookCursor, ensureHookCursor, readHookEvents, releaseHookCursor, type HookEventRow } from '../store/hook-cursors.js';
import {
  advancePartitionCursors,
  cursorName,
  ensurePartitionCursor,
  nodeGroups,
  positionsAfter,
  readPartitionBatch,
  releasePartitionCursors,
} from '../store/partitioned-hooks.js';
import { partitionStore, type Store } from '../store/store.js';

/**
 * Delivers lifecycle events to the registered consumers: each has a loop of its own that reads the
 * run history after its cursor (one statement, which also renews its lease), calls the handler for
 * each event in order, then moves the cursor past what was delivered. The engine never waits for
 * it: the history rows are written by the engine's own statements, and a slow or failing handler
 * only holds up its own consumer. A handler that throws gets the same event again at the next look
 * (the cursor stays before it); a crash between delivery and the cursor's move delivers again.
 * Distributed mode: a consumer has a cursor and a lease per partition (store/partitioned-hooks.ts),
 * looked at in turn, the partition looked at first moving on each round; order holds per partition,
 * so per run.
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
    const count = this.store.layout.partitions;
    if (count === null) await Promise.all(this.consumers.map((c) => ensureHookCursor(this.store, c.consumer)));
    else {
      const groups = await nodeGroups(this.store);
      for (const c of this.consumers)
        for (let k = 0; k < count; k++) await ensurePartitionCursor(partitionStore(this.store, k), cursorName(c.consumer, k), groups);
    }
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
    const release = this.store.layout.partitions === null ? releaseHookCursor : releasePartitionCursors;
    await Promise.all(this.consumers.map((c) => release(this.store, c.consumer, owner).catch(() => {})));
  }

  private async loop(c: HookConsumer): Promise<void> {
    const { hooks, workerId, logger } = this.options;
    const outage = new OutageLog(`lifecycle hooks of consumer "${c.consumer}"`, logger);
    const kinds = [...c.types].map((t) => EVENT_KINDS[t]);
    for (let turn = 0; this.running; turn++) {
      let full = false;
      try {
        full =
          this.store.layout.partitions === null ? await this.round(c, kinds, workerId) : await this.partitions(c, kinds, workerId, turn);
        outage.ok();
      } catch (err) {
        outage.failed(err);
      }
      if (this.running && !full) await this.sleep(outage.backoffMs() || hooks.pollIntervalMs);
    }
  }

  /** One look: read, deliver in order, move the cursor. True when the batch was full (look again at once). */
  private async round(c: HookConsumer, kinds: string[], owner: string): Promise<boolean> {
    const { hooks } = this.options;
    const batch = await readHookEvents(this.store, {
      consumer: c.consumer,
      owner,
      leaseMs: hooks.leaseMs,
      settleMs: hooks.settleMs,
      limit: hooks.batchSize,
      kinds,
    });
    if (!batch.held || batch.upto === null) return false;
    const n = await this.deliver(c, batch.events);
    const delivered = n < batch.events.length ? previousId(batch.events[n].id) : batch.upto;
    if (BigInt(delivered) > 0n) await advanceHookCursor(this.store, c.consumer, owner, delivered);
    return delivered === batch.upto && batch.read >= hooks.batchSize;
  }

  /**
   * Distributed mode: one look at each partition's cursor, starting one further each round (every
   * partition is looked at first in turn); a partition that fails does not keep the others from being
   * served (the first error is thrown after). True when a batch was full.
   */
  private async partitions(c: HookConsumer, kinds: string[], owner: string, turn: number): Promise<boolean> {
    const count = this.store.layout.partitions!;
    const { hooks } = this.options;
    const groups = await nodeGroups(this.store);
    let full = false;
    let failure: { err: unknown } | null = null;
    for (let i = 0; i < count && this.running; i++) {
      const k = (turn + i) % count;
      const name = cursorName(c.consumer, k);
      try {
        const batch = await readPartitionBatch(partitionStore(this.store, k), {
          consumer: name,
          owner,
          leaseMs: hooks.leaseMs,
          settleMs: hooks.settleMs,
          limit: hooks.batchSize,
          kinds,
          groups,
        });
        if (!batch.held || !batch.rows.length) continue;
        const events = batch.rows.flatMap((r) => (r.event ? [r.event] : []));
        const n = await this.deliver(c, events);
        const handled = n < events.length ? batch.rows.findIndex((r) => r.event === events[n]) : batch.rows.length;
        await advancePartitionCursors(this.store, name, owner, positionsAfter(batch.rows, handled));
        if (handled === batch.rows.length && batch.full) full = true;
      } catch (err) {
        failure ??= { err };
      }
    }
    if (failure) throw failure.err;
    return full;
  }

  /** Calls the handler with each event in order; how many it took (it stops at the first that throws). */
  private async deliver(c: HookConsumer, events: HookEventRow[]): Promise<number> {
    const { hooks, logger } = this.options;
    for (const [n, row] of events.entries()) {
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
        return n;
      }
    }
    return events.length;
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
