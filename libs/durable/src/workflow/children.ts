import { createHash } from 'node:crypto';
import {
  IdempotencyConflictError,
  InvalidArgumentError,
  RunNotFoundError,
  WorkflowCancelledError,
  WorkflowFailedError,
} from '../errors/index.js';
import { MAX_ID_LENGTH } from '../config/limits.js';
import { decode, encode } from '../codec/codec.js';
import { startChildren } from '../store/children.js';
import type { NewRun } from '../store/rows.js';
import { durableOperation, fencedWrite } from './durable-operation.js';
import type { RunContext } from './run-context.js';
import { WaitSet } from './wait-set.js';

/** Options of Durable.startChild(). */
export interface ChildOptions {
  /** The child's run id. Default `${parentRunId}:child:${seq}` (deterministic, so a replay finds the same child). */
  id?: string;
  /** Overrides the child workflow's queue. */
  queue?: string;
  /** Overrides the child workflow's priority. */
  priority?: number;
  /** Overrides the child workflow's timeoutMs (deadline from its start); null = none. */
  timeoutMs?: number | null;
  /** Start the child this many ms later. */
  delayMs?: number;
  /**
   * The child's tags (as StartOptions.tags). Default: the parent's tags, so that a search or a bulk
   * action by tag finds a whole tree of runs; `[]` starts the child without tags.
   */
  tags?: readonly string[];
}

const startStepName = (workflow: string) => `durable.startChild:${workflow}`;
const resultStepName = (childId: string) => `durable.result:${childId}`;

/**
 * A child run started by Durable.startChild(). Its `result()` is a durable wait of the parent:
 * recorded once, replayed identically; while the child runs, the parent is suspended (WAITING)
 * and is woken when the child ends.
 */
export class ChildWorkflowHandle<TOutput = unknown> {
  constructor(
    /** The child's run id (WorkflowClient.getRun, cancel, … work with it too). */
    readonly id: string,
    readonly workflowName: string,
  ) {}

  /**
   * The child's output once it SUCCEEDED. Throws WorkflowFailedError (the child's stored error),
   * WorkflowCancelledError, or RunNotFoundError (the child run was deleted). Call it from the
   * parent's workflow code (not from a step).
   */
  result(): Promise<TOutput> {
    return durableOperation('ChildWorkflowHandle.result()', resultStepName(this.id), ({ ctx, seq, name, recorded }) => {
      const settle = (out: unknown) => settleChild<TOutput>(this.id, out);
      if (recorded?.status === 'SUCCEEDED') return settle(decode(recorded.output));
      return WaitSet.of(ctx).wait({ seq, kind: 'child', name, key: this.id, ms: null, due: null }, settle);
    });
  }
}

function settleChild<T>(childId: string, out: unknown): T {
  const r = out as { status: string; output?: unknown; error?: unknown };
  if (r.status === 'SUCCEEDED') return r.output as T;
  if (r.status === 'CANCELLED') throw new WorkflowCancelledError(childId);
  if (r.status === 'MISSING') throw new RunNotFoundError(childId);
  throw new WorkflowFailedError(childId, r.error);
}

/** Durable.startChild — see durable-api.ts. */
export function startChild<T = unknown>(workflowName: string, input: unknown, opts: ChildOptions = {}): Promise<ChildWorkflowHandle<T>> {
  if (typeof workflowName !== 'string' || !workflowName) {
    return Promise.reject(new InvalidArgumentError('Durable.startChild(): the workflow name must be a non-empty string.', 'workflowName'));
  }
  return durableOperation('Durable.startChild()', startStepName(workflowName), ({ ctx, seq, name, recorded }) => {
    if (recorded?.status === 'SUCCEEDED') {
      const r = decode(recorded.output) as { id: string; workflow: string };
      return new ChildWorkflowHandle<T>(r.id, r.workflow);
    }
    return create<T>(ctx, seq, name, workflowName, input, opts ?? {});
  });
}

function create<T>(
  ctx: RunContext,
  seq: number,
  stepName: string,
  workflowName: string,
  input: unknown,
  opts: ChildOptions,
): Promise<ChildWorkflowHandle<T>> {
  const { newRun } = ctx.services;
  const id = opts.id ?? childId(ctx.runId, seq);
  const child = newRun(workflowName, input, { ...opts, id });
  child.parentId = ctx.runId;
  // The child's executions continue the parent's trace, as children of this execution's span.
  child.traceparent = ctx.services.telemetry.tracing.traceparentOf(ctx.span);
  const output = encode({ id: child.id, workflow: child.workflowName }, { where: `step "${stepName}" of run ${ctx.runId}` });
  return new Promise<void>((resolve, reject) => {
    let batch = pendingStarts.get(ctx);
    if (!batch) {
      // Every startChild of this tick (a Promise.all fan-out) goes into one statement.
      const created: PendingStart[] = (batch = []);
      pendingStarts.set(ctx, created);
      const done = ctx.enterWork();
      queueMicrotask(() => {
        pendingStarts.delete(ctx);
        void startBatch(ctx, created).finally(done);
      });
    }
    batch.push({ seq, name: stepName, child, output, inheritTags: opts.tags === undefined || opts.tags === null, resolve, reject });
  }).then(() => new ChildWorkflowHandle<T>(child.id, child.workflowName));
}

interface PendingStart {
  seq: number;
  name: string;
  child: NewRun;
  output: string;
  inheritTags: boolean;
  resolve(): void;
  reject(err: unknown): void;
}

const pendingStarts = new WeakMap<RunContext, PendingStart[]>();

async function startBatch(ctx: RunContext, batch: PendingStart[]): Promise<void> {
  try {
    const { store, options } = ctx.services;
    const r = await fencedWrite(ctx, () =>
      startChildren(store, { runId: ctx.runId, epoch: ctx.epoch, appVersion: options.appVersion, children: batch }),
    );
    const conflicts = new Map(r.conflicts.map((c) => [c.seq, c.workflow]));
    for (const b of batch) {
      const other = conflicts.get(b.seq);
      if (other) b.reject(new IdempotencyConflictError(b.child.id, other, b.child.workflowName));
      else b.resolve();
    }
  } catch (err) {
    for (const b of batch) b.reject(err);
  }
}

/** Deterministic child id: the same on every replay of the parent. */
function childId(parentId: string, seq: number): string {
  const id = `${parentId}:child:${seq}`;
  if (id.length <= MAX_ID_LENGTH) return id;
  return `${createHash('sha256').update(parentId).digest('hex')}:child:${seq}`;
}
