import { setTimeout as delay } from 'node:timers/promises';
import { isConnectionError } from '../store/connection-errors.js';
import { BACKOFF, backoffMs } from '../retry/backoff.js';
import { OutageLog } from '../retry/outage-log.js';
import type { ExecutionServices } from './execution-services.js';

/** What a retried write needs of its execution (a RunContext has it; declared here so this file does not import run-context.ts). */
export interface WritingExecution {
  readonly services: ExecutionServices;
  /** Aborted when the execution stops: ends the wait before the next try. */
  readonly abort: AbortController;
  /** Throws ExecutionStopped if the execution must not go on. */
  throwIfStopped(): void;
}

/** One outage log per engine for the writes executions make (checkpoints, run ends): logged once per outage. */
const writeOutages = new WeakMap<ExecutionServices, OutageLog>();

/**
 * Runs a write an execution makes for its run (a step checkpoint, a durable operation's record,
 * the run's end). If the database connection fails, the write itself is tried again with back-off
 * — the step's code does not run again — for as long as the run's lease may still be valid: until
 * the execution is stopped (the heartbeat stops it when it could not renew the lease in time) and
 * at most leaseMs after the first failure; then the error is thrown. Every such write is fenced by
 * the lease epoch, so a late success can never overwrite a new owner's work.
 */
export async function retryingWrite<T>(
  ctx: WritingExecution,
  fn: () => Promise<T>,
  retryable: (err: unknown) => boolean = isConnectionError,
): Promise<T> {
  const { options } = ctx.services;
  let outage = writeOutages.get(ctx.services);
  if (!outage) writeOutages.set(ctx.services, (outage = new OutageLog('writing checkpoints', options.logger)));
  let firstFailure = 0;
  for (let attempt = 1; ; attempt++) {
    ctx.throwIfStopped();
    try {
      const result = await fn();
      outage.ok(); // any write that goes through ends the outage (the one that failed may have given up)
      return result;
    } catch (err) {
      if (!retryable(err)) throw err;
      firstFailure ||= Date.now();
      if (Date.now() - firstFailure >= options.leaseMs) throw err;
      outage.failed(err);
      await delay(backoffMs(BACKOFF.write, attempt), undefined, { signal: ctx.abort.signal }).catch(() => ctx.throwIfStopped());
    }
  }
}
