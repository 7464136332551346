import { NotInWorkflowError } from '../errors/index.js';
import { errorText } from '../errors/error-text.js';
import { encode } from '../codec/codec.js';
import { MAX_PROGRESS_BYTES, PROGRESS_INTERVAL_MS } from '../config/limits.js';
import { setProgress } from '../store/progress.js';
import { currentScope, type RunContext } from './run-context.js';

/**
 * Progress of the steps executing in one execution of a run (Durable.progress): the latest value
 * of each, written to the run row by one small fenced UPDATE at most every PROGRESS_INTERVAL_MS
 * (the last value of a burst is written at the end of the interval), so a chatty step cannot flood
 * the database. Best effort: a write that fails or matches nothing is dropped, never failing a step.
 */
export class ProgressReporter {
  /** Latest progress of each step executing now, by seq (JSON text of the value). */
  private readonly current = new Map<number, { step: string; value: string }>();
  private lastWriteAt = 0;
  private timer?: NodeJS.Timeout;
  private writing = false;
  private dirty = false;
  private closed = false;

  private constructor(private readonly ctx: RunContext) {
    ctx.abort.signal.addEventListener('abort', () => this.close(), { once: true });
  }

  static of(ctx: RunContext): ProgressReporter {
    if (!ctx.progress) ctx.progress = new ProgressReporter(ctx);
    return ctx.progress as ProgressReporter;
  }

  report(seq: number, step: string, value: string): void {
    if (this.closed) return;
    this.current.set(seq, { step, value });
    this.dirty = true;
    this.schedule();
  }

  /** The step ended: its progress is not sent again (the dashboard shows a finished step's result instead). */
  stepEnded(seq: number): void {
    this.current.delete(seq);
  }

  /** The execution ended: nothing more is written. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.writing || this.timer || this.closed) return;
    const wait = this.lastWriteAt + PROGRESS_INTERVAL_MS - Date.now();
    if (wait <= 0) return void this.write();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.write();
    }, wait);
    this.timer.unref?.();
  }

  private async write(): Promise<void> {
    if (this.closed || !this.dirty) return;
    this.dirty = false;
    this.writing = true;
    this.lastWriteAt = Date.now();
    const { ctx } = this;
    const steps = Object.fromEntries([...this.current].map(([seq, p]) => [seq, { step: p.step, value: JSON.parse(p.value) as unknown }]));
    try {
      await setProgress(ctx.services.store, ctx.runId, ctx.epoch, JSON.stringify(steps));
    } catch (err) {
      ctx.services.options.logger.debug?.(`run ${ctx.runId}: could not record progress (${errorText(err)})`);
    } finally {
      this.writing = false;
    }
    if (this.dirty) this.schedule();
  }
}

/** Durable.progress — see durable-api.ts. */
export function reportProgress(value: unknown): void {
  const scope = currentScope();
  if (!scope?.step) throw new NotInWorkflowError('Durable.progress()', 'a step (@Step() or Durable.step)');
  const { run, step } = scope;
  const encoded = encode(value, {
    where: `progress of step "${step.name}" (#${step.seq}) of run ${run.runId}`,
    maxBytes: MAX_PROGRESS_BYTES,
  });
  ProgressReporter.of(run).report(step.seq, step.name, encoded);
}
