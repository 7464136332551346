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
import type { ReadStreamOptions, StreamChunk } from './stream-reader.js';
import type { LocalRunEnd } from './local-results.js';

/** What a handle needs from the engine. */
export interface HandleBackend {
  fetchResult(id: string): Promise<{ status: RunStatus; output: unknown; error: unknown } | null>;
  /**
   * Resolves when the run finishes in this process (with its end as written here), after `ms`, or
   * when `signal` aborts — whichever is first.
   */
  waitLocal(id: string, ms: number, signal?: AbortSignal): Promise<LocalRunEnd | undefined | void>;
  /**
   * The run executes in this process and will hand its end over to waitLocal (or wake it when its
   * execution ends otherwise): reading its row meanwhile tells nothing new.
   */
  executesHere?(id: string): boolean;
  /** The chunks of one of the run's streams (see DurableEngine.readStream). */
  readStream?<T>(id: string, stream: string, opts: ReadStreamOptions): AsyncGenerator<StreamChunk<T>, RunStatus | null, undefined>;
}

/** What result() knows without a read of a run that executes in this process. */
const RUNNING_HERE = { status: 'RUNNING' as RunStatus, output: null, error: null };

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

  /**
   * The chunks the run writes to its stream `name` (Durable.stream(name)), from `opts.from`
   * (default: the first), live: `for await (const { position, value } of handle.stream('answer'))`.
   * Ends after the stream's close(), or once the run ended and every chunk was read.
   */
  stream<T = unknown>(name: string, opts: ReadStreamOptions = {}): AsyncGenerator<StreamChunk<T>, RunStatus | null, undefined> {
    if (!this.backend.readStream) throw new InvalidArgumentError('stream(): this handle was made by a backend that cannot read streams.');
    return this.backend.readStream<T>(this.id, name, opts);
  }

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
    // The wait for an end in this process starts before each read of the run: an end written between
    // the read and the wait would otherwise be seen only at the next read, a poll interval later.
    const done = new AbortController();
    // While the run executes here, its end comes to the wait without a read; the row is still read once
    // a poll interval at its longest, for what reaches the row another way (a cancel whose notice was lost).
    let readAt = Date.now();
    const read = () => ((readAt = Date.now()), this.backend.fetchResult(this.id));
    try {
      for (let attempt = 1; ; attempt++) {
        const wait = Math.min(backoffMs(BACKOFF.resultPoll, attempt), Math.max(0, deadline - Date.now()));
        const local = this.backend.waitLocal(this.id, wait, done.signal);
        // Checked after the wait started: an execution here that ends from now on wakes it. Out of
        // time, the row is read: what it says, not what this process believes, decides.
        const here =
          this.backend.executesHere?.(this.id) === true && Date.now() - readAt < BACKOFF.resultPoll.maxMs && deadline > Date.now();
        const r = here ? RUNNING_HERE : await read();
        if (!r) throw new RunNotFoundError(this.id);
        if (FINISHED_STATUSES.has(r.status)) return this.settle(r.status, r.output, r.error);
        if (deadline - Date.now() <= 0) throw new ResultTimeoutError(this.id, opts.timeoutMs!, r.status);
        // A run that ends in this process hands its end over: no read back.
        const readEnded = Date.now();
        let end = await local;
        // The wait started before the read; a slow read must not shorten the pause before the next one.
        const rest = Math.min(wait - (Date.now() - readEnded), deadline - Date.now());
        if (!end && rest > 0) end = await this.backend.waitLocal(this.id, rest, done.signal);
        if (end)
          return this.settle(
            end.status,
            end.output === null ? null : JSON.parse(end.output),
            end.error === null ? null : JSON.parse(end.error),
          );
      }
    } finally {
      done.abort();
    }
  }

  private settle(status: RunStatus, output: unknown, error: unknown): TOutput {
    if (status === 'SUCCEEDED') return decode(output) as TOutput;
    if (status === 'CANCELLED') throw new WorkflowCancelledError(this.id);
    throw new WorkflowFailedError(this.id, error);
  }
}
