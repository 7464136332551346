import { randomUUID } from 'node:crypto';
import { NotInWorkflowError } from '../errors/index.js';
import { checkStepOptions } from '../config/option-checks.js';
import type { InlineCompensation, StepDefinition, StepOptions } from '../definitions/definitions.js';
import { compensateNow } from './compensation.js';
import { reportProgress } from './progress.js';
import { currentScope } from './run-context.js';
import { currentStepTransaction, invokeStep } from './step-runner.js';
import { startChild, type ChildOptions, type ChildWorkflowHandle } from './children.js';
import { startChildren, type ChildGroup, type ChildGroupInputs, type ChildGroupOptions } from './child-groups.js';
import { setEvent } from './events.js';
import { durableSend } from './messages.js';
import { durableRecv, durableSleep } from './waits.js';
import { durableStream, type DurableStreamWriter } from './streams.js';
import { durableCallback, waitForSignal, type DurableCallback } from './signals.js';
import type { SignalDefinition } from '../definitions/signals.js';
import { patched } from './patches.js';
import { backfill, type BackfillInput, type BackfillResult, type BackfillSpec } from './backfill.js';

/** Options of Durable.step(): those of @Step(), with a compensation that is a function of the step's result. */
export interface InlineStepOptions<T = unknown> extends Omit<StepOptions, 'name' | 'compensate'> {
  compensate?: ((result: T) => unknown) | (Omit<InlineCompensation, 'run'> & { run: (result: T) => unknown });
}

const recorded = (name: string): StepDefinition => ({ name, options: { retries: 0 } });
const NOW = recorded('durable.now');
const RANDOM = recorded('durable.random');
const UUID = recorded('durable.uuid');

/**
 * Helpers for code running inside a workflow (and its steps). Values that differ between
 * executions (time, randomness) are recorded once and replayed identically.
 */
export const Durable = {
  /** Id of the run in scope. */
  runId(): string {
    const scope = currentScope();
    if (!scope) throw new NotInWorkflowError('Durable.runId()');
    return scope.run.runId;
  },

  /**
   * The app's context the run was started with (engine option `context`: what `capture()` returned
   * in the request that started it, or the start option `context`), the same in every execution and
   * on every instance; a child run has its parent's. undefined for a run started without one.
   */
  context<C = unknown>(): C | undefined {
    const scope = currentScope();
    if (!scope) throw new NotInWorkflowError('Durable.context()');
    return scope.run.appContext as C | undefined;
  },

  /** True when called inside a running workflow or one of its steps. */
  inWorkflow(): boolean {
    return currentScope() !== undefined;
  },

  /**
   * Inside a `@Step({ transactional: true })`: the Prisma transaction client that also commits
   * the step's checkpoint. Write through it, and those writes happen exactly once.
   */
  tx<T = unknown>(): T {
    return currentStepTransaction<T>();
  },

  /**
   * Aborted when the work in scope must stop: the run's execution stops (cancelled, lease lost,
   * shutdown, deadline), the run is being cancelled with compensation, or — inside a step with
   * `timeoutMs` — the attempt's time is up (the reason is then a StepTimeoutError). Pass it to
   * fetch() and the like inside long steps.
   */
  signal(): AbortSignal {
    const scope = currentScope();
    if (!scope) throw new NotInWorkflowError('Durable.signal()');
    return scope.step?.signal ?? scope.run.forward.signal;
  },

  /**
   * Inside a step: reports how far it got — any small JSON value (at most 4 KiB), e.g.
   * `{ done: 420, total: 1000 }` or `0.42`. getRun(id).progress and the dashboard show the latest
   * value of each step executing now. Cheap to call often: the run row is updated at most once a
   * second (the latest value wins), fenced by the lease. Best effort: never fails the step.
   */
  progress(value: unknown): void {
    reportProgress(value);
  },

  /**
   * Runs, now, the compensations of the steps completed so far (those declaring `compensate`),
   * newest first, each as a durable step; then the workflow goes on (e.g. to record why it gave
   * up). Each compensation runs once per run: the ones run here do not run again if the workflow
   * fails later. Throws CompensationFailedError if one fails after its retries (the older ones
   * then do not run). Resolves to how many ran. Workflow code only.
   */
  compensate(): Promise<number> {
    return compensateNow();
  },

  /**
   * Runs `fn` as a durable step named `name`, exactly like a method marked @Step(options): its
   * result is checkpointed, replayed after a crash, retried with back-off when it throws
   * (transactional: true runs it in one Prisma transaction with its checkpoint). For code without
   * a provider method to decorate, e.g. with the Nest-free engine. `compensate` is a function of
   * the step's result (or `{ run, ...step options }`) that undoes it.
   */
  step<T>(name: string, fn: () => T | Promise<T>, options: InlineStepOptions<Awaited<T>> = {}): Promise<Awaited<T>> {
    try {
      checkStepOptions(`Durable.step("${String(name)}")`, { ...options, name }, 'inline');
      return Promise.resolve(invokeStep({ name, options: options as StepOptions }, fn) as Awaited<T>);
    } catch (err) {
      return Promise.reject(err);
    }
  },

  /**
   * A patch marker, for changing a workflow while runs are in flight: true for a run that reaches
   * this point with this code (new runs, and old runs that had not got this far), false for a run
   * that went past this point before the patch existed. Recorded like a step, so every replay of a
   * run gets the same answer. `if (await Durable.patched('fraud-check')) await this.fraudCheck(order)`
   * adds a step only for the runs that can take it; the else branch keeps an old path for the others.
   * Retire a patch by deleting the call (keep the new path) once `npx nestjs-durable verify` finds no
   * run that still needs the old one: recorded markers the code no longer asks for are passed over.
   * Workflow code only; await it before starting the operations it decides.
   */
  patched(id: string): Promise<boolean> {
    return patched(id);
  },

  /**
   * Walks a table in key order and processes it in batches, each batch one transactional step: its
   * writes (through the `tx` given to `process`) and the cursor commit together, so every row is
   * processed exactly once across crashes and deploys. Call it as the body of a workflow
   * (`return Durable.backfill(input, spec)`); start that workflow to run the backfill, with an id
   * of your choosing to make starting it twice run it once. Pause and resume it with
   * WorkflowClient.pauseBackfill/resumeBackfill (a paused backfill waits without a worker slot),
   * cancel it like any run; its progress (rows done, estimate, rate) is the run's event
   * 'durable.backfill', which the admin API and the dashboard show. Workflow code only.
   */
  backfill<Row, Key = unknown>(input: BackfillInput | null | undefined, spec: BackfillSpec<Row, Key>): Promise<BackfillResult<Key>> {
    return backfill(input, spec);
  },

  /** Current time in ms, recorded on first execution and replayed identically. */
  async now(): Promise<number> {
    return (await invokeStep(NOW, () => currentScope()?.run.services.clock.now() ?? Date.now())) as number;
  },

  /** Math.random(), recorded once. */
  async random(): Promise<number> {
    return (await invokeStep(RANDOM, () => Math.random())) as number;
  },

  /** A random UUID, recorded once. */
  async uuid(): Promise<string> {
    return (await invokeStep(UUID, () => randomUUID())) as string;
  },

  /**
   * Pauses the workflow for `ms` milliseconds, durably: the wake time is recorded (database clock)
   * the first time, so a replay after a crash waits only for what is left. A pause longer than the
   * engine option `inMemoryWaitMaxMs` (default 5 s) suspends the run: it goes to WAITING, frees its
   * worker slot, lease and connection, and is replayed from its checkpoints when due — a run may
   * sleep for days and survive any number of restarts. Inside a step it is a plain (non-durable) pause.
   */
  sleep(ms: number): Promise<void> {
    return durableSleep(ms);
  },

  /**
   * Receives the next message sent to this run on `topic` (WorkflowClient.send), exactly once and in
   * send order; messages sent before the run got here wait for it. Without a message it waits — up
   * to `timeoutMs` if given (then returns null; the deadline is recorded, so a replay keeps it),
   * otherwise until one arrives. A long wait suspends the run like `sleep`; a message wakes it at
   * once. The result is recorded: a replay returns the same message.
   */
  recv<T = unknown>(topic: string, opts: { timeoutMs?: number } = {}): Promise<T | null> {
    return durableRecv<T>(topic, opts);
  },

  /**
   * Waits for a signal (defineSignal) sent to this run — from its endpoint (module option `signals`,
   * behind the signal's guards), the dashboard, or WorkflowClient.sendSignal — and returns its
   * payload; null after `timeoutMs`. A durable wait like recv: a long one suspends the run.
   */
  waitForSignal<T>(signal: SignalDefinition<T>, opts: { timeoutMs?: number } = {}): Promise<T | null> {
    return waitForSignal<T>(signal, opts);
  },

  /**
   * A callback URL for a third party (a payment provider, an e-signature service…) that resumes this
   * run when it POSTs to it: `const cb = await Durable.callback({ timeoutMs })`, hand `cb.url` over
   * in a step, then `const body = await cb.wait()`. The URL is signed (engine option
   * `callbacks.secret`), the same on every replay, single use (a retry with the same body is
   * accepted, another body refused) and dead after `timeoutMs` or once the run ended; with `signal`
   * the body is checked against that signal's payload before it is accepted.
   */
  callback<T = unknown>(opts: { timeoutMs: number; signal?: SignalDefinition<T> }): Promise<DurableCallback<T>> {
    return durableCallback<T>(opts);
  },

  /**
   * Sends a message to another run (e.g. parent ↔ child) from workflow code, exactly once: the
   * send is recorded with the step in one statement, so a replay does not send it again. The
   * receiver gets it with Durable.recv(topic). Unknown run → RunNotFoundError.
   */
  send(runId: string, topic: string, payload: unknown): Promise<void> {
    return durableSend(runId, topic, payload);
  },

  /**
   * A stream of this run named `name`: `write(chunk)` appends to it, `close()` ends it (so does the
   * run's end). Readers get the chunks live and from any position: `handle.stream(name)`,
   * WorkflowClient.readStream / streamEvents (Server-Sent Events). From workflow code each write is
   * a durable operation, stored exactly once at its position across replays; inside a step a chunk
   * is stored as the step runs, and the step's n-th chunk only once across its attempts (a retried
   * attempt goes on after what an earlier one stored). Chunks are kept with the run.
   */
  stream<T = unknown>(name: string): DurableStreamWriter<T> {
    return durableStream<T>(name);
  },

  /**
   * Publishes `value` under `key` for this run (latest value wins); clients read it with
   * WorkflowClient.getEvent(runId, key). Recorded as a step: a replay does not publish it again.
   */
  setEvent(key: string, value: unknown): Promise<void> {
    return setEvent(key, value);
  },

  /**
   * Starts a child workflow run, recorded as a step (the child is created iff the step is
   * recorded; its id is deterministic, `${runId}:child:${seq}` unless `opts.id` is given). The
   * returned handle's `result()` is a durable wait: the parent suspends until the child ends, and
   * is woken when it does. Cancelling the parent cancels its children (engine option cancelChildren).
   * Start children in parallel with Promise.all over startChild calls.
   */
  startChild<T = unknown>(workflowName: string, input?: unknown, opts?: ChildOptions): Promise<ChildWorkflowHandle<T>> {
    return startChild<T>(workflowName, input, opts);
  },

  /**
   * Starts a group of children of one workflow — a fan-out of any size, up to millions — recorded
   * as one step. The children are written in chunks of 1,000 per statement (workers start on the
   * first chunk while the next is written); `inputs` is an array, or `{ count, input(index) }` so
   * that no array of inputs is held. The group is counted on one row: `group.wait()` suspends the
   * parent until all (or `atLeast` n) children ended, with one wake-up instead of one per child,
   * and `group.results({ from, limit })` reads their outcomes in pages.
   */
  startChildren<T = unknown>(workflowName: string, inputs: ChildGroupInputs, opts?: ChildGroupOptions): Promise<ChildGroup<T>> {
    return startChildren<T>(workflowName, inputs, opts);
  },
};
