import {
  InvalidArgumentError,
  ResultTimeoutError,
  RunNotFoundError,
  WorkflowCancelledError,
  WorkflowFailedError,
} from '../errors/index.js';
import { FINISHED_STATUSES, type RunStatus } from '../store/rows.js';
import { BACKOFF, backoffMs } from '../retry/backoff.js';
import { decode } from '../codec/codec.js';
import type { StartOutcome } from './start-options.js';

/** What a handle needs from the engine. */
export interface HandleBackend {
  fetchResult(id: string): Promise<{ status: RunStatus; output: unknown; error: unknown } | null>;
  /** Resolves when the run finishes in this process, or after `ms` — whichever is first. */
  waitLocal(id: string, ms: number): Promise<void>;
}

/** A started run. `result()` waits for it to finish; the run goes on whether or not anyone waits. */
export class WorkflowHandle<TOutput = unknown> {
  constructor(
    readonly id: string,
    readonly workflowName: string,
    private readonly backend: HandleBackend,
    /**
     * How the start that made this handle ended: 'started' (a new run), 'existing' (the run with the
     * given id existed), 'deduplicated' (the active run holding the dedupeKey: `id` is that run's),
     * 'debounced' (joined the pending run of the debounce key). null: a handle to a run by id, no start.
     */
    readonly outcome: StartOutcome | null = null,
  ) {}

  async status(): Promise<RunStatus> {
    const r = await this.backend.fetchResult(this.id);
    if (!r) throw new RunNotFoundError(this.id);
    return r.status;
  }

  /**
   * The run's output once it SUCCEEDED. Throws WorkflowFailedError (FAILED, with the stored
   * error), WorkflowCancelledError, or ResultTimeoutError after `timeoutMs` (default: wait forever).
   */
  async result(opts: { timeoutMs?: number } = {}): Promise<TOutput> {
    if (opts.timeoutMs !== undefined && !(typeof opts.timeoutMs === 'number' && opts.timeoutMs >= 0)) {
      throw new InvalidArgumentError(
        `result(): timeoutMs must be a number of milliseconds ≥ 0, or omitted to wait until the run ends (got ${JSON.stringify(opts.timeoutMs)}).`,
      );
    }
    const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
    for (let attempt = 1; ; attempt++) {
      const r = await this.backend.fetchResult(this.id);
      if (!r) throw new RunNotFoundError(this.id);
      if (FINISHED_STATUSES.has(r.status)) {
        if (r.status === 'SUCCEEDED') return decode(r.output) as TOutput;
        if (r.status === 'CANCELLED') throw new WorkflowCancelledError(this.id);
        throw new WorkflowFailedError(this.id, r.error);
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new ResultTimeoutError(this.id, opts.timeoutMs!, r.status);
      await this.backend.waitLocal(this.id, Math.min(backoffMs(BACKOFF.resultPoll, attempt), left));
    }
  }
}
