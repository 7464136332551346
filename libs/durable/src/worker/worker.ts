import { AsyncResource } from 'node:async_hooks';
import { performance } from 'node:perf_hooks';
import { MAX_TIMER_MS } from '../config/limits.js';
import { errorText } from '../errors/error-text.js';
import { releaseRuns } from '../store/leases.js';
import type { ClaimedRun, HeldRun } from '../store/rows.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import { RunContext } from '../workflow/run-context.js';
import type { ExecutionServices } from '../workflow/execution-services.js';
import { executeRun, type ExecutionOutcome } from './executor.js';
import { FlowGate } from './flow-gate.js';
import { LeaseKeeper } from './lease-keeper.js';
import { RunSlot } from './run-slot.js';
import { ActiveRuns, type ActiveRun } from './active-runs.js';
import { claimSize, newQueueState, type QueueState } from './queue-state.js';
import { WakeTimers } from './wake-timers.js';

/**
 * Claims runs of its queues (batch claim, SKIP LOCKED), executes them within per-queue
 * concurrency slots, keeps their leases alive (LeaseKeeper), and on shutdown drains, then hands
 * back what is left.
 */
export class Worker {
  private readonly queues = new Map<string, QueueState>();
  private readonly active = new ActiveRuns();
  /** Stopped runs to hand back at the end of this turn of the event loop (handBackSoon). */
  private readonly handBack: HeldRun[] = [];
  private running = false;
  /** Workflows this worker has code for: the only ones it claims. */
  private workflowNames: string[] = [];
  private readonly leases: LeaseKeeper;
  private readonly finishedListeners = new Set<(runId: string, outcome: ExecutionOutcome) => void>();
  /** Local wake-ups of runs this worker suspended until a near time (polling is the fallback). */
  private readonly wakeTimers: WakeTimers;
  /** Which queues have cluster-wide limits (claimed under their limits row's lock). */
  readonly flow: FlowGate;
  /**
   * The async context the worker was made in: claims are scheduled in it. A run frees its slot from
   * inside its own span's context (or a request's, for a run started in-process), which a claim must
   * not inherit. One resource for the worker: binding a function per run (AsyncResource.bind) showed
   * up in CPU profiles of a drain as a cost per run (most of it Node's deprecation wrappers).
   */
  private readonly background = new AsyncResource('nestjs-durable.worker');

  constructor(
    private readonly registry: WorkflowRegistry,
    private readonly services: ExecutionServices,
  ) {
    this.wakeTimers = new WakeTimers(services.clock, (queue) => this.wake(queue));
    this.flow = new FlowGate(services.store, services.options, (queues) => queues.forEach((q) => this.wake(q)));
    this.leases = new LeaseKeeper(
      {
        held: () => this.active.held(),
        lost: (h) => {
          const a = this.active.get(h.id);
          // Not RUNNING under our lease any more: lost, unless this execution is ending or suspending
          // it right now (or it already ended and the run was claimed again, under a new epoch).
          if (a && a.run.epoch === h.epoch && !a.ctx.isReleasing) a.ctx.stop('lease-lost');
        },
        cancelRequested: (h) => {
          const a = this.active.get(h.id);
          if (a && a.run.epoch === h.epoch) a.ctx.requestCancel();
        },
        lostAll: () => this.active.stopAll('lease-lost'),
        release: (held) => this.release(held),
      },
      services,
    );
  }

  get id(): string {
    return this.services.options.workerId;
  }

  queueNames(): string[] {
    return [...this.queues.keys()];
  }

  /** Runs executing now, by queue (the metrics' active-runs gauge). */
  activeByQueue(): Map<string, number> {
    return this.active.byQueue(this.queues.keys());
  }

  /** Serves the queues of the registered workflows and those named in the options. */
  start(): void {
    if (this.running) return;
    const o = this.services.options;
    this.workflowNames = this.registry.names();
    for (const name of new Set([...this.registry.queues(), ...Object.keys(o.queues)])) {
      if (!this.queues.has(name)) this.queues.set(name, newQueueState(name, o));
    }
    this.running = true;
    for (const q of this.queues.values()) this.schedulePoll(q, 0);
    this.leases.start();
  }

  /**
   * The run executes here and has not been told to stop: its execution hands its end over, or ends
   * otherwise (suspended, stopped) before anything else can end the run, and tells onRunFinished.
   */
  executes(runId: string): boolean {
    const a = this.active.get(runId);
    return a !== undefined && a.ctx.stopped === null;
  }

  onRunFinished(listener: (runId: string, outcome: ExecutionOutcome) => void): () => void {
    this.finishedListeners.add(listener);
    return () => this.finishedListeners.delete(listener);
  }

  /** A wake-up hint for a queue (pg_notify, or a run finished here). */
  wake(queue: string): void {
    const q = this.queues.get(queue);
    if (!q) return;
    q.more = true;
    if (q.claiming) q.wokenDuringClaim = true;
    this.claim(q);
  }

  /** Wake every queue (e.g. after the wake-up listener reconnected and may have missed hints). */
  wakeAll(): void {
    for (const q of this.queues.keys()) this.wake(q);
  }

  /** The clock jumped (virtual time): waits executing here look at their times again. */
  timeMoved(): void {
    for (const a of this.active.values()) a.ctx.waits?.timeMoved();
  }

  /** The run was cancelled: stop it at the next step boundary (its fenced writes fail anyway). */
  cancelled(runId: string): void {
    this.active.get(runId)?.ctx.stop('cancelled');
  }

  /**
   * The run was asked to cancel with compensation: it stops at its next step boundary (what is
   * running may complete and is kept), then runs its compensations and ends CANCELLED.
   */
  cancelRequested(runId: string): void {
    this.active.get(runId)?.ctx.requestCancel();
  }

  /** Something a run executing here may wait for arrived (message, finished child): it looks again. */
  signal(runId: string): void {
    this.active.get(runId)?.ctx.waits?.signal();
  }

  /** Reserves a slot for a run this process is about to insert already claimed (never in a queue with cluster-wide limits). */
  reserveSlot(queue: string): boolean {
    const q = this.queues.get(queue);
    if (!this.running || !q || q.busy >= q.concurrency || this.flow.isLimited(queue)) return false;
    q.busy++;
    return true;
  }

  /** Re-reads which queues have cluster-wide limits (a start found one this process had not heard of). */
  refreshLimits(): void {
    void this.flow.refreshNow();
  }

  releaseSlot(queue: string): void {
    const q = this.queues.get(queue);
    if (q) {
      q.busy--;
      this.claim(q);
    }
  }

  /** Executes a run this worker holds the lease of (claimed, or inserted claimed into a reserved slot). */
  execute(run: ClaimedRun, queue: string): void {
    const q = this.queues.get(queue)!;
    const ctx = new RunContext(run.id, run.epoch, run.steps, this.services);
    ctx.workflowName = run.workflowName;
    ctx.token = run.availableAt ?? null;
    const slot = new RunSlot(q, () => {
      if (q.more) this.claimSoon(q);
    });
    ctx.slot = slot;
    const entry = { run, ctx, queue: q } as ActiveRun;
    this.active.set(run.id, entry);
    let deadlineTimer: NodeJS.Timeout | undefined;
    const untilDeadline = run.deadlineAt ? Math.max(0, run.deadlineAt.getTime() - this.services.clock.now()) : Infinity;
    // The sweeper fails the run at its deadline; stop executing it then. A deadline further away than
    // a timer can wait (about 24.8 days: Node fires a longer one at once) is left to the sweeper alone.
    if (untilDeadline <= MAX_TIMER_MS) deadlineTimer = setTimeout(() => ctx.stop('deadline'), untilDeadline);
    entry.done = executeRun(run, ctx, this.registry, this.services, q.name).then((outcome) => {
      clearTimeout(deadlineTimer);
      // Only this execution's entry: a stopped execution may still be unwinding (a step's own code
      // cannot be interrupted) when this worker claims the run again under a new epoch, and the
      // new execution's lease must stay in held() to be renewed.
      if (this.active.get(run.id) === entry) this.active.delete(run.id);
      if (ctx.stopped === 'lease-lost' || ctx.stopped === 'failover') this.handBackSoon({ id: run.id, epoch: run.epoch });
      slot.done();
      if (ctx.suspended) this.wakeAt(ctx.suspended.queue, ctx.suspended.until);
      for (const l of this.finishedListeners) l(run.id, outcome);
      return outcome;
    });
  }

  /**
   * Claims once this turn of the event loop is over: runs that end together (their ends were
   * written in one statement) free their slots first, so one claim fills them all.
   */
  private claimSoon(q: QueueState): void {
    if (q.claimQueued) return;
    q.claimQueued = true;
    this.background.runInAsyncScope(() =>
      setImmediate(() => {
        q.claimQueued = false;
        this.claim(q);
      }),
    );
  }

  /** Claims up to the free slots (claimSize), in one statement. */
  private claim(q: QueueState): void {
    if (!this.running || q.claiming || q.busy >= q.concurrency || !q.more) return;
    q.claiming = true;
    const want = claimSize(q.concurrency - q.busy, q.lastClaimed);
    q.busy += want; // hold the slots while the claim is in flight
    const began = performance.now();
    q.claimed = this.flow
      .claim(q.name, want, this.id, this.workflowNames)
      .then(
        (runs) => {
          q.outage.ok();
          const { metrics } = this.services.telemetry;
          if (metrics.enabled)
            metrics.claimed(
              q.name,
              (performance.now() - began) / 1000,
              runs.map((r) => r.availableAt),
            );
          q.busy -= want - runs.length;
          // The next claim asks for twice what this one found (claimSize): a full claim doubles it.
          q.lastClaimed = runs.length;
          q.more = runs.length === want || q.wokenDuringClaim;
          for (const run of runs) {
            if (this.running) this.execute(run, q.name);
            else q.busy--; // stopping: the lease is released below or expires
          }
          if (!this.running && runs.length) return this.release(runs.map((r) => ({ id: r.id, epoch: r.epoch }))).then(() => {});
        },
        (err) => {
          q.busy -= want;
          if (this.running) q.outage.failed(err);
        },
      )
      .finally(() => {
        q.claiming = false;
        q.wokenDuringClaim = false;
        const backoff = q.outage.backoffMs();
        if (backoff) this.schedulePoll(q, backoff);
        else if (q.more) setImmediate(() => this.claim(q));
      });
  }

  /** A run this worker suspended becomes due at `until`: claim then rather than at the next poll (WakeTimers). */
  private wakeAt(queue: string, until: Date): void {
    if (this.running && this.queues.has(queue)) this.wakeTimers.at(queue, until);
  }

  private schedulePoll(q: QueueState, ms?: number): void {
    clearTimeout(q.pollTimer);
    if (!this.running) return;
    const poll = this.services.options.pollIntervalMs;
    const wait = ms ?? Math.round(poll * (0.8 + Math.random() * 0.4));
    q.pollTimer = setTimeout(() => {
      q.more = true;
      this.claim(q);
      this.schedulePoll(q);
    }, wait);
    q.pollTimer.unref?.();
  }

  /**
   * Stops claiming, lets in-flight runs finish for up to graceMs, then stops the rest at their
   * next step boundary and hands their leases back so another instance resumes them at once.
   */
  async stop(graceMs: number): Promise<void> {
    if (!this.running) return;
    this.running = false;
    for (const q of this.queues.values()) clearTimeout(q.pollTimer);
    this.leases.stop();
    this.flow.stop();
    this.wakeTimers.clear();
    // Runs that only wait suspend now (WAITING, exact wake time) instead of holding up the drain.
    for (const a of this.active.values()) a.ctx.waits?.hurry();
    // Claims in flight are waited for too (within the grace period): what they took goes back before the engine closes its pool.
    const drained = Promise.all([...[...this.active.values()].map((a) => a.done), ...[...this.queues.values()].map((q) => q.claimed)]);
    const timedOut = await Promise.race([
      drained.then(() => false),
      new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref?.()),
    ]);
    if (!timedOut) return;
    const left = [...this.active.values()];
    const held = this.active.held();
    this.active.stopAll('shutdown');
    const released = await this.release(held);
    this.services.options.logger.log(
      `shutdown: ${left.length} run(s) still executing after ${graceMs} ms; ${released} handed back for another instance`,
    );
  }

  /**
   * The database failed over to another primary. With asynchronous replication it may lack the
   * last writes of the executions in flight here (a checkpoint, a message sent, a child started),
   * which they would go on without: stop them all; each is handed back (if the new primary still
   * has it leased to this worker) and replayed from what the new primary holds.
   */
  primaryChanged(): void {
    const n = this.active.size;
    if (n) this.services.options.logger.warn(`the database failed over: replaying the ${n} run(s) executing here from the new primary`);
    this.active.stopAll('failover');
  }

  /**
   * An execution stopped because its lease may be lost (a heartbeat that failed or came late, a
   * process that was frozen) or because the database failed over may in fact still hold it: hand
   * it back (fenced by its epoch, so a lease another worker took is not touched) so the run is
   * claimable at once instead of when the lease expires. Batched per turn of the event loop; a
   * failure is only a delay (the lease expires).
   */
  private handBackSoon(run: HeldRun): void {
    this.handBack.push(run);
    if (this.handBack.length > 1) return;
    setImmediate(() => {
      const runs = this.handBack.splice(0);
      releaseRuns(this.services.store, runs).catch((err: unknown) =>
        this.services.options.logger.debug?.(`could not hand back ${runs.length} stopped run(s) (${errorText(err)}); their leases expire`),
      );
    });
  }

  private async release(held: HeldRun[]): Promise<number> {
    try {
      return await releaseRuns(this.services.store, held);
    } catch (err) {
      this.services.options.logger.error(
        `could not hand back ${held.length} run(s) (${errorText(err)}); they resume when their leases expire`,
      );
      return 0;
    }
  }
}
