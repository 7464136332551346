import { errorText } from '../errors/error-text.js';
import type { StepCheckpoint } from '../store/rows.js';
import { ExecutionStopped, type StopReason } from './execution-stopped.js';
import { retryingWrite, type WritingExecution } from './retrying-write.js';

/** What the deferred checkpoints need of their execution (a RunContext has it; declared here so this file does not import run-context.ts). */
export interface CheckpointingExecution extends WritingExecution {
  readonly runId: string;
  readonly workflowName: string;
  readonly stopped: StopReason | null;
  /** Marks work in flight until the returned function is called. */
  enterWork(): () => void;
  /** Stops the execution: a fenced write matched nothing. */
  leaseLost(): ExecutionStopped;
  stop(reason: StopReason): void;
}

interface Unsent {
  step: StepCheckpoint;
  resolve(): void;
  reject(err: unknown): void;
}

/** Checkpoints a run's end carries in its own statement (see DeferredCheckpoints.take). */
export interface CarriedCheckpoints {
  steps: StepCheckpoint[];
  /** The end's statement held the run (ended or refused: the checkpoints were written), or not. */
  settle(held: boolean): void;
  /** The end's statement failed: the checkpoints were not written (the run's end reports it). */
  fail(err: unknown): void;
}

/**
 * Checkpoints of completed steps whose result the workflow already has, not written yet. The
 * workflow code goes on at once, and nothing durable follows before the checkpoint is written: the
 * next durable operation waits for it (durable-operation.ts), the run cannot suspend meanwhile (each
 * holds the run busy), and the run's end carries the ones still unsent in its own statement — one
 * round trip and one commit less for a workflow that returns right after its last step (the step
 * row is written if and only if the end's fenced statement holds the run). What is still unsent at
 * the next turn of the event loop goes out on its own, as before.
 */
export class DeferredCheckpoints {
  private unsent: Unsent[] = [];
  private readonly writing = new Set<Promise<void>>();
  private timer: NodeJS.Immediate | null = null;

  constructor(private readonly ctx: CheckpointingExecution) {}

  /** A checkpoint is unsent or being written. */
  get pending(): boolean {
    return this.unsent.length > 0 || this.writing.size > 0;
  }

  /**
   * Takes a completed step's checkpoint; resolves once it is written, rejects (ExecutionStopped) when
   * the run was no longer held or the write failed (the execution is stopped then).
   */
  defer(step: StepCheckpoint): Promise<void> {
    const done = this.ctx.enterWork();
    const durable = new Promise<void>((resolve, reject) => {
      this.unsent.push({ step, resolve, reject });
    });
    durable.then(done, done);
    this.timer ??= setImmediate(() => {
      this.timer = null;
      void this.flush();
    });
    return durable;
  }

  /** Sends the unsent checkpoints and waits until every checkpoint in flight is written or has failed (never rejects). */
  async flush(): Promise<void> {
    for (const u of this.unsent.splice(0)) {
      const w = retryingWrite(this.ctx, () => this.ctx.services.writes.step(u.step)).then(
        (ok) => this.settle(u, ok),
        (err) => u.reject(this.failed(u.step, err)),
      );
      this.writing.add(w);
      void w.finally(() => this.writing.delete(w));
    }
    while (this.writing.size) await Promise.allSettled([...this.writing]);
  }

  /**
   * For the run's end: the unsent checkpoints, which the end's statement writes (the caller settles
   * them with its outcome). Checkpoints already in flight are not among them: wait for them first.
   */
  take(): CarriedCheckpoints {
    const taken = this.unsent.splice(0);
    return {
      steps: taken.map((u) => u.step),
      settle: (held) => taken.forEach((u) => this.settle(u, held)),
      fail: (err) => taken.forEach((u) => u.reject(err)),
    };
  }

  /** Written, or its run was no longer held (the lease moved on: the execution stops). */
  private settle(u: Unsent, written: boolean): void {
    if (written) u.resolve();
    else u.reject(this.ctx.leaseLost());
  }

  /** A checkpoint could not be written: the execution stops and writes nothing more (the run is replayed after its lease expires). */
  private failed(step: StepCheckpoint, err: unknown): ExecutionStopped {
    if (err instanceof ExecutionStopped || this.ctx.stopped)
      return new ExecutionStopped(this.ctx.stopped ?? (err as ExecutionStopped).reason);
    this.ctx.services.options.logger.error(
      `run ${this.ctx.runId} (${this.ctx.workflowName}): could not record the checkpoint of step "${step.name}" (#${step.seq}) ` +
        `(${errorText(err)}); another worker will replay the run after its lease expires`,
    );
    this.ctx.stop('checkpoint-failed');
    return new ExecutionStopped('checkpoint-failed');
  }
}
