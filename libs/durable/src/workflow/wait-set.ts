import { MAX_TIMER_MS } from '../config/limits.js';
import { errorText } from '../errors/error-text.js';
import { resolveWaits, type WaitSpec } from '../store/waits.js';
import { BACKOFF, backoffMs } from '../retry/backoff.js';
import { decode } from '../codec/codec.js';
import { ExecutionStopped, type RunContext } from './run-context.js';

interface PendingWait extends WaitSpec {
  resolve(value: unknown): void;
  reject(error: unknown): void;
  /** Turns the recorded output of a resolved wait into its result (or throws the error to reject with). */
  settle(output: unknown): unknown;
  /** When this execution started waiting (engine clock). */
  since: number;
}

/** A recv deadline the database did not see as passed yet is looked at again after this long. */
const RECHECK_AFTER_MS = 20;

/**
 * The durable waits (sleep, recv, child results) pending in one execution of a run.
 *
 * Waits are resolved in batches: one RESOLVE_WAITS statement records every wait that can end now
 * (a message to consume, a child that finished, a timeout that passed) and records new timers.
 * When nothing can progress — no step is executing, every wait is blocked, no timer is due
 * within `inMemoryWaitMaxMs`, and no message/child wait started less than `suspendGraceMs` ago —
 * the same statement suspends the run (WAITING until its earliest timer) and the execution
 * stops; the run is replayed when it is woken. Until then the run waits in memory (it keeps its
 * slot); a signal (a message sent to the run, a child that finished: LISTEN hint) makes it look
 * again at once.
 */
export class WaitSet {
  private readonly pending = new Map<number, PendingWait>();
  /** Something changed that only the database can tell about (new wait, signal, passed deadline). */
  private dirty = false;
  private scheduled = false;
  private flushing: Promise<void> | null = null;
  private timer?: NodeJS.Timeout;
  private closed = false;
  private lastFlushAt = 0;
  private failures = 0;
  private retryAt = 0;
  private stalls = 0;
  /** Shutting down: suspend as soon as nothing executes, however short the waits. */
  private hurried = false;

  private constructor(private readonly ctx: RunContext) {
    ctx.abort.signal.addEventListener('abort', () => this.abortAll(), { once: true });
  }

  /** The wait set of an execution (created on first use). */
  static of(ctx: RunContext): WaitSet {
    if (!ctx.waits) ctx.waits = new WaitSet(ctx);
    return ctx.waits as WaitSet;
  }

  /** The engine's clock (virtual time in tests), the one the database's recorded times compare with. */
  private now(): number {
    return this.ctx.services.clock.now();
  }

  /** The clock jumped (virtual time): look at every wait's time again now. */
  timeMoved(): void {
    this.dirty = true;
    clearTimeout(this.timer);
    this.schedule();
  }

  /** Registers a wait; the promise settles when it ends (or rejects with ExecutionStopped). */
  wait<T>(spec: WaitSpec, settle: (output: unknown) => T): Promise<T> {
    // Replay only (verify): a wait that has not ended (e.g. a sleep not due yet) is where the replay ends.
    if (this.ctx.replayOnly) return this.ctx.reachFrontier<T>(spec.seq, spec.name);
    if (this.ctx.stopped) return Promise.reject(new ExecutionStopped(this.ctx.stopped));
    if (this.ctx.cancelling) return Promise.reject(this.ctx.cancelledError());
    const p = new Promise<T>((resolve, reject) => {
      this.pending.set(spec.seq, { ...spec, resolve: resolve as (v: unknown) => void, reject, settle, since: this.now() });
    });
    // A wait nobody awaits any more (e.g. the loser of a Promise.race) must not become an unhandled rejection.
    p.catch(() => {});
    if (spec.kind !== 'sleep' || spec.due === null) this.dirty = true;
    this.schedule();
    return p;
  }

  /** Something the run may wait for arrived (a message, a finished child): look again. */
  signal(): void {
    for (const w of this.pending.values()) {
      if (w.kind !== 'sleep') {
        this.dirty = true;
        this.schedule();
        return;
      }
    }
  }

  /** No step is executing any more: the run may be able to suspend. */
  idle(): void {
    if (this.pending.size) this.schedule();
  }

  /**
   * The worker is shutting down: suspend the run as soon as nothing executes (even for a short
   * wait), so it is handed over as WAITING with its exact wake-up time instead of being released.
   */
  hurry(): void {
    this.hurried = true;
    if (this.pending.size) this.schedule();
  }

  /** The workflow returned (or threw): no further statements; waits for the one in flight. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.flushing;
  }

  /**
   * The run is being cancelled with compensation: no further statement; pending waits reject with
   * `err` — after the statement in flight (if any) has delivered what it resolved, because what it
   * recorded is what a replay will see.
   */
  cancel(err: Error): void {
    this.closed = true;
    clearTimeout(this.timer);
    const rejectPending = () => {
      const waits = [...this.pending.values()];
      this.pending.clear();
      for (const w of waits) w.reject(err);
    };
    if (this.flushing) void this.flushing.then(rejectPending, rejectPending);
    else rejectPending();
  }

  private abortAll(): void {
    this.closed = true;
    clearTimeout(this.timer);
    const err = new ExecutionStopped(this.ctx.stopped ?? 'shutdown');
    const waits = [...this.pending.values()];
    this.pending.clear();
    for (const w of waits) w.reject(err);
  }

  private schedule(): void {
    if (this.closed || this.scheduled) return;
    this.scheduled = true;
    // After the current microtasks: the workflow code has reached its next await by then, so
    // every wait started "at the same time" (Promise.all) is in the batch.
    setImmediate(() => {
      this.scheduled = false;
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.closed || this.ctx.stopped || this.flushing) return;
    const now = this.now();
    for (const w of this.sorted()) {
      if (w.kind === 'sleep' && w.due && w.due.getTime() <= now) {
        this.pending.delete(w.seq);
        w.resolve(w.settle(undefined));
      }
    }
    if (!this.pending.size) {
      clearTimeout(this.timer);
      return;
    }
    if (now >= this.lastFlushAt + RECHECK_AFTER_MS) {
      for (const w of this.pending.values()) if (w.kind === 'recv' && w.due && w.due.getTime() <= now) this.dirty = true;
    }
    const threshold = this.ctx.services.options.inMemoryWaitMaxMs;
    const maySuspend = this.ctx.busy === 0 && (this.hurried || (this.nextTimerMs(now) > threshold && now >= this.graceUntil()));
    if ((this.dirty || maySuspend) && now >= this.retryAt) {
      this.dirty = false;
      this.flushing = this.flush(maySuspend);
      try {
        await this.flushing;
      } finally {
        this.flushing = null;
      }
      if (this.closed || this.ctx.stopped) return;
      // Resolved waits let the workflow go on; it reaches its next await before the next look.
      if (this.pending.size) this.schedule();
      return;
    }
    this.armTimer(now);
  }

  /** ms until the earliest timer of a pending wait (a new one counts its full length); Infinity if none. */
  private nextTimerMs(now: number): number {
    let min = Infinity;
    for (const w of this.pending.values()) {
      if (w.kind === 'child') continue;
      if (w.due) min = Math.min(min, w.due.getTime() - now);
      else if (w.ms !== null) min = Math.min(min, w.ms);
    }
    return min;
  }

  /** Until then the run stays in memory for the messages/children it just started waiting for. */
  private graceUntil(): number {
    const grace = this.ctx.services.options.suspendGraceMs;
    let until = 0;
    for (const w of this.pending.values()) if (w.kind !== 'sleep') until = Math.max(until, w.since + grace);
    return until;
  }

  /** Wakes the set up for its next in-memory timer (or a retry after a database error, or the end of the grace). */
  private armTimer(now: number): void {
    clearTimeout(this.timer);
    let at = this.retryAt > now ? this.retryAt : Infinity;
    const grace = this.graceUntil();
    if (grace > now) at = Math.min(at, grace);
    for (const w of this.pending.values()) {
      if (!w.due || w.kind === 'child') continue;
      const t = w.due.getTime();
      at = Math.min(at, w.kind === 'recv' && t <= now ? this.lastFlushAt + RECHECK_AFTER_MS : t);
    }
    if (at === Infinity) return;
    // setTimeout cannot wait longer than MAX_TIMER_MS; a later wake-up just looks again then.
    this.timer = setTimeout(() => void this.pump(), Math.min(MAX_TIMER_MS, Math.max(1, at - now + 1)));
    this.timer.unref?.();
  }

  private sorted(): PendingWait[] {
    return [...this.pending.values()].sort((a, b) => a.seq - b.seq);
  }

  private async flush(maySuspend: boolean): Promise<void> {
    const ctx = this.ctx;
    const { options, store } = ctx.services;
    const waits = this.sorted();
    this.lastFlushAt = this.now();
    let res;
    try {
      const resolve = () =>
        resolveWaits(store, {
          runId: ctx.runId,
          epoch: ctx.epoch,
          token: ctx.token,
          maySuspend,
          recheckMs: options.waitRecheckMs,
          waits: waits.map(({ seq, kind, name, key, ms, due, count, owner }) => ({ seq, kind, name, key, ms, due, count, owner })),
        });
      res = maySuspend ? await ctx.releasing(resolve) : await resolve();
      this.failures = 0;
      this.retryAt = 0;
    } catch (err) {
      // The run stays RUNNING under its lease; look again after a back-off (the heartbeat stops
      // the run if the database stays away for longer than the lease).
      this.failures++;
      this.dirty = true;
      this.retryAt = this.now() + backoffMs(BACKOFF.waitCheck, this.failures);
      if (this.failures === 1) options.logger.warn(`run ${ctx.runId}: could not check its waits (${errorText(err)}); retrying`);
      this.armTimer(this.now());
      return;
    }
    if (!res.held) {
      ctx.stop('lease-lost');
      return;
    }
    const sameToken = res.token !== null && ctx.token !== null && res.token.getTime() === ctx.token.getTime();
    if (maySuspend && !res.suspended && !res.steps.length && sameToken) {
      // Cannot happen by design (nothing resolved, token unchanged ⇒ suspended); never spin on it.
      this.stalls++;
      this.retryAt = this.now() + backoffMs(BACKOFF.waitStall, this.stalls);
      this.dirty = true;
    } else this.stalls = 0;
    if (res.token) ctx.token = res.token;
    for (const s of res.steps.sort((a, b) => a.seq - b.seq)) {
      const w = this.pending.get(s.seq);
      if (!w) continue;
      const out = decode(s.output);
      if (s.status === 'WAITING') {
        w.due = (out as { deadline: Date }).deadline;
        w.ms = null;
      } else if (w.kind === 'sleep') {
        w.due = out as Date;
        w.ms = null;
      } else {
        this.pending.delete(s.seq);
        if (s.message) {
          const attrs = { workflow: ctx.workflowName, runId: ctx.runId, topic: w.key ?? '', seq: s.seq };
          ctx.services.telemetry.tracing.received(ctx.span, attrs, s.traceparent);
        }
        try {
          w.resolve(w.settle(out));
        } catch (err) {
          w.reject(err);
        }
      }
    }
    if (res.suspended) {
      ctx.suspended = res.suspended;
      ctx.stop('suspended');
    }
  }
}
