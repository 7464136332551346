import { setTimeout as delay } from 'node:timers/promises';
import { DurableError } from '../errors/index.js';
import type { RunStatus } from '../store/run-store.js';
import type { SqlClient } from '../store/sql-client.js';
import { waitStore } from '../store/wait-store.js';
import { decode, encode } from './codec.js';
import { ExecutionStopped } from './run-context.js';
import { asPromise, recordedAt, retrying, workflowContext } from './waits.js';

const setEventStepName = (key: string) => `durable.setEvent:${key}`;
const TERMINAL: ReadonlySet<RunStatus> = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

function checkKey(api: string, key: unknown): string {
  if (typeof key !== 'string' || !key || key.length > 256) {
    throw new DurableError('INVALID_ARGUMENT', `${api}: the key must be a non-empty string of at most 256 characters (got ${JSON.stringify(key)}).`);
  }
  return key;
}

/** Durable.setEvent — see durable-api.ts. */
export function setEvent(key: string, value: unknown): Promise<void> {
  return asPromise(async () => {
    checkKey('Durable.setEvent()', key);
    const ctx = workflowContext('Durable.setEvent()');
    const name = setEventStepName(key);
    const seq = ctx.takeSeq();
    ctx.throwIfStopped();
    if (recordedAt(ctx, seq, name)) return;
    const encoded = encode(value, { where: `event "${key}" of run ${ctx.runId}`, maxBytes: ctx.services.options.maxPayloadBytes });
    const done = ctx.enterWork();
    try {
      const held = await retrying(ctx, `publish event "${key}"`, () =>
        waitStore.setEvent(ctx.services.sql, { runId: ctx.runId, epoch: ctx.epoch, seq, name, key, value: encoded }),
      );
      if (!held) {
        ctx.stop('lease-lost');
        throw new ExecutionStopped('lease-lost');
      }
    } finally {
      done();
    }
  });
}

/**
 * WorkflowClient.getEvent: the latest value the run published under `key`; if there is none yet,
 * polls (10 ms doubling to 500 ms) until it appears or `timeoutMs` passes → null. Also null at
 * once when the run has ended without publishing it.
 */
export async function getEvent<T>(sql: SqlClient, runId: string, key: string, timeoutMs: number): Promise<T | null> {
  checkKey('getEvent()', key);
  if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0)) {
    throw new DurableError('INVALID_ARGUMENT', `getEvent(): timeoutMs must be a number of milliseconds ≥ 0 (got ${JSON.stringify(timeoutMs)}).`);
  }
  const end = Date.now() + timeoutMs;
  let pause = 10;
  for (;;) {
    const r = await waitStore.getEvent(sql, runId, key);
    if (r.found) return decode(r.value) as T;
    if (r.status && TERMINAL.has(r.status)) return null;
    const left = end - Date.now();
    if (left <= 0) return null;
    await delay(Math.min(pause, left));
    pause = Math.min(pause * 2, 500);
  }
}
