import { createHash } from 'node:crypto';
import { InvalidArgumentError, NotInWorkflowError, RunNotFoundError, UnknownWorkflowError } from '../errors/index.js';
import { MAX_ID_LENGTH } from '../config/limits.js';
import { decode, encode } from '../codec/codec.js';
import { groupCounts, groupPage, startGroupChunk } from '../store/child-groups.js';
import type { StepDefinition } from '../definitions/definitions.js';
import type { NewRun } from '../store/rows.js';
import type { ChildOptions } from './children.js';
import { durableOperation, fencedWrite } from './durable-operation.js';
import { currentScope, type RunContext } from './run-context.js';
import { invokeStep } from './step-runner.js';
import { WaitSet } from './wait-set.js';
import { completionsRange, readCompletions, type ChildGroupCompletions } from './group-completions.js';
import { outcomeOf, type ChildOutcome } from './child-outcomes.js';

export type { ChildOutcome } from './child-outcomes.js';

/** Children written per statement: a 100,000-child fan-out is 100 statements, whatever its size in memory. */
export const GROUP_CHUNK = 1_000;
/** The most children one group may have. */
export const MAX_GROUP_SIZE = 10_000_000;
/** The most outcomes one results() page reads. */
export const MAX_GROUP_PAGE = 10_000;

/** Options of Durable.startChildren(): those of startChild() but the id (a group's children are numbered). */
export type ChildGroupOptions = Omit<ChildOptions, 'id'>;

/** The inputs of a group: an array, or a count and a function that gives the input of each child (nothing held in memory). */
export type ChildGroupInputs = readonly unknown[] | { count: number; input: (index: number) => unknown };

/** Where a group stands: how many of its children ended, and how. */
export interface ChildGroupProgress {
  total: number;
  ended: number;
  succeeded: number;
  failed: number;
  cancelled: number;
}

const startName = (workflow: string) => `durable.startChildren:${workflow}`;
const waitName = (group: number) => `durable.group.wait:${group}`;
const RESULTS: StepDefinition = { name: 'durable.group.results', options: { retries: 3 } };

/**
 * A group of children started by Durable.startChildren(). The parent waits on the group's counter
 * (one number, however many children), not on each child, and reads their outcomes in pages.
 */
export class ChildGroup<TOutput = unknown> {
  constructor(
    /** The run that started the group (a run forked from it reads the same group). */
    private readonly runId: string,
    /** The parent's step that started the group (its identity within the run). */
    readonly seq: number,
    readonly workflowName: string,
    /** Number of children. */
    readonly size: number,
  ) {}

  /** Id of the group's child number `index` (0-based, in input order). */
  childId(index: number): string {
    return groupChildId(this.runId, this.seq, index);
  }

  /**
   * Waits (durably: the parent suspends, no worker slot held) until `atLeast` children have ended
   * — all of them by default — and returns the group's counters at that moment. A failed or
   * cancelled child counts as ended: check `failed` and `cancelled`.
   */
  wait(opts: { atLeast?: number } = {}): Promise<ChildGroupProgress> {
    const need = opts?.atLeast ?? this.size;
    if (!Number.isInteger(need) || need < 0 || need > this.size) {
      return Promise.reject(
        new InvalidArgumentError(
          `ChildGroup.wait(): atLeast must be an integer from 0 to the group's size (${this.size}); got ${String(need)}.`,
          'atLeast',
        ),
      );
    }
    return durableOperation('ChildGroup.wait()', waitName(this.seq), ({ ctx, seq, name, recorded }) => {
      if (recorded?.status === 'SUCCEEDED') {
        const out = decode(recorded.output) as ChildGroupProgress & { missing?: boolean };
        if (out.missing) throw new RunNotFoundError(this.runId);
        return out;
      }
      const owner = this.runId === ctx.runId ? null : this.runId;
      return WaitSet.of(ctx).wait({ seq, kind: 'group', name, key: String(this.seq), count: need, owner, ms: null, due: null }, (out) => {
        // The run that started the group was deleted (a fork waits on its source's group).
        if ((out as { missing?: boolean }).missing) throw new RunNotFoundError(this.runId);
        return out as ChildGroupProgress;
      });
    });
  }

  /**
   * The children that ended after end `after`, in the order they ended (a step: recorded, so a
   * replay reads the same page), and a `cursor` to read on from. Reads what has ended, without
   * waiting: see asCompleted() to take outcomes as they come. An end is numbered when its child's
   * end commits, so nothing ends "behind" a cursor: reading on from it misses none.
   */
  completions(opts: { after?: number; limit?: number } = {}): Promise<ChildGroupCompletions<TOutput>> {
    const range = completionsRange('completions', opts?.after ?? 0, opts?.limit ?? 1_000);
    if (range instanceof InvalidArgumentError) return Promise.reject(range);
    return readCompletions<TOutput>(this.runId, this.seq, range, (i) => this.childId(i));
  }

  /**
   * The group's outcomes as the children end, first ended first, until every child has ended:
   * `for await (const outcome of group.asCompleted()) …`. Between pages the parent waits durably
   * (suspended, no worker slot held) for the next end. A child resumed after it failed and ending
   * again comes a second time, with its new outcome.
   */
  async *asCompleted(opts: { pageSize?: number } = {}): AsyncGenerator<ChildOutcome<TOutput>, void, undefined> {
    const range = completionsRange('asCompleted', 0, opts?.pageSize ?? 100);
    if (range instanceof InvalidArgumentError) throw range;
    let after = 0;
    for (;;) {
      const page = await readCompletions<TOutput>(this.runId, this.seq, { after, limit: range.limit }, (i) => this.childId(i));
      yield* page.outcomes;
      if (page.done) return;
      if (!page.outcomes.length) await this.wait({ atLeast: Math.min(this.size, page.ended + 1) });
      after = page.cursor;
    }
  }

  /**
   * The outcomes of children `from` … `from + limit - 1` in input order (a step: recorded, so a
   * replay reads the same page). Children that have not ended yet come with their status only;
   * call it after wait() to read finished work. Pages keep memory flat: read 1,000 at a time.
   */
  results(opts: { from?: number; limit?: number } = {}): Promise<Array<ChildOutcome<TOutput>>> {
    const from = opts?.from ?? 0;
    const limit = opts?.limit ?? 1_000;
    if (!Number.isInteger(from) || from < 0) {
      return Promise.reject(new InvalidArgumentError(`ChildGroup.results(): from must be an integer ≥ 0; got ${String(from)}.`, 'from'));
    }
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_GROUP_PAGE) {
      return Promise.reject(
        new InvalidArgumentError(
          `ChildGroup.results(): limit must be an integer from 1 to ${MAX_GROUP_PAGE}; got ${String(limit)}.`,
          'limit',
        ),
      );
    }
    const { runId, seq } = this;
    return Promise.resolve(
      invokeStep(RESULTS, async () => {
        const run = currentScope()?.run;
        if (!run) throw new NotInWorkflowError('ChildGroup.results()');
        const rows = await groupPage(run.services.store, runId, seq, from, limit);
        return rows.map((r) => outcomeOf<TOutput>(r));
      }),
    ) as Promise<Array<ChildOutcome<TOutput>>>;
  }
}

/** Durable.startChildren — see durable-api.ts. */
export function startChildren<T = unknown>(
  workflowName: string,
  inputs: ChildGroupInputs,
  opts: ChildGroupOptions = {},
): Promise<ChildGroup<T>> {
  if (typeof workflowName !== 'string' || !workflowName) {
    return Promise.reject(
      new InvalidArgumentError('Durable.startChildren(): the workflow name must be a non-empty string.', 'workflowName'),
    );
  }
  const source = inputSource(inputs);
  if (source instanceof InvalidArgumentError) return Promise.reject(source);
  if ((opts as { id?: unknown } | undefined)?.id !== undefined) {
    return Promise.reject(
      new InvalidArgumentError(
        "Durable.startChildren(): a group's children are numbered (group.childId(i)), so the option id is not accepted.",
        'id',
      ),
    );
  }
  return durableOperation('Durable.startChildren()', startName(workflowName), async ({ ctx, seq, name, recorded }) => {
    if (recorded?.status === 'SUCCEEDED') {
      // `run`: the run that started the group — this one, or the source of a fork.
      const r = decode(recorded.output) as { workflow: string; total: number; run: string };
      return new ChildGroup<T>(r.run, seq, r.workflow, r.total);
    }
    await createGroup(ctx, seq, name, workflowName, source, opts ?? {});
    return new ChildGroup<T>(ctx.runId, seq, workflowName, source.count);
  });
}

interface InputSource {
  count: number;
  input: (index: number) => unknown;
}

function inputSource(inputs: ChildGroupInputs): InputSource | InvalidArgumentError {
  const fail = (what: string) =>
    new InvalidArgumentError(
      `Durable.startChildren(): inputs must be an array, or { count, input(index) } with count an integer from 0 to ${MAX_GROUP_SIZE}; ${what}.`,
      'inputs',
    );
  if (Array.isArray(inputs)) {
    if (inputs.length > MAX_GROUP_SIZE) return fail(`got an array of ${inputs.length}`);
    return { count: inputs.length, input: (i) => inputs[i] };
  }
  const s = inputs as { count?: unknown; input?: unknown } | null;
  if (!s || typeof s !== 'object') return fail(`got ${s === null ? 'null' : typeof s}`);
  if (typeof s.input !== 'function') return fail('input is not a function');
  const count = s.count;
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 0 || count > MAX_GROUP_SIZE)
    return fail(`got count ${String(count)}`);
  return { count, input: s.input as (i: number) => unknown };
}

/**
 * Writes the group's children in chunks of GROUP_CHUNK, each chunk one fenced statement; the last
 * records the parent's step. After a crash the next execution goes on from the group's `created`
 * (the chunks before it are written; writing one again writes nothing twice).
 */
async function createGroup(
  ctx: RunContext,
  seq: number,
  stepName: string,
  workflowName: string,
  source: InputSource,
  opts: ChildGroupOptions,
) {
  const { newRun, store, options, telemetry } = ctx.services;
  const [existing] = await groupCounts(store, ctx.runId, [seq]);
  const traceparent = telemetry.tracing.traceparentOf(ctx.span);
  const stepOutput = encode(
    { workflow: workflowName, total: source.count, run: ctx.runId },
    { where: `step "${stepName}" of run ${ctx.runId}` },
  );
  const inheritTags = opts.tags === undefined || opts.tags === null;
  let from = existing?.created ?? 0;
  do {
    const end = Math.min(source.count, from + GROUP_CHUNK);
    const ids: string[] = [];
    const inputs: string[] = [];
    const keys: Array<string | null> = [];
    let shared = from < end ? null : emptyGroupRun(() => newRun(workflowName, null, { ...opts, id: groupChildId(ctx.runId, seq, 0) }));
    for (let i = from; i < end; i++) {
      const child = newRun(workflowName, source.input(i), { ...opts, id: groupChildId(ctx.runId, seq, i) });
      shared ??= child;
      ids.push(child.id);
      inputs.push(child.input);
      keys.push(child.concurrencyKey);
    }
    const c = shared!;
    await fencedWrite(ctx, () =>
      startGroupChunk(store, {
        runId: ctx.runId,
        epoch: ctx.epoch,
        seq,
        stepName,
        workflow: workflowName,
        total: source.count,
        from,
        ids,
        inputs,
        concurrencyKeys: keys,
        queue: c.queue,
        priority: c.priority,
        delayMs: c.delayMs,
        timeoutMs: c.timeoutMs,
        appVersion: options.appVersion,
        traceparent,
        tags: inheritTags ? null : c.tags,
        stepOutput: end === source.count ? stepOutput : null,
      }),
    );
    from = end;
  } while (from < source.count);
}

/**
 * An empty group still checks its workflow and options (an unknown workflow, bad tags); the run it
 * builds is never written, so a concurrencyKey function that cannot take a null input does not matter.
 */
function emptyGroupRun(build: () => NewRun): NewRun {
  try {
    return build();
  } catch (err) {
    if (err instanceof UnknownWorkflowError || err instanceof InvalidArgumentError) throw err;
    return { ...FALLBACK_RUN };
  }
}
const FALLBACK_RUN: NewRun = {
  id: '',
  workflowName: '',
  queue: '',
  input: 'null',
  priority: 0,
  runAt: null,
  delayMs: null,
  timeoutMs: null,
  parentId: null,
  appVersion: null,
  concurrencyKey: null,
  tags: [],
};

/** Deterministic id of a group's child: the same on every replay of the parent. */
export function groupChildId(parentId: string, seq: number, index: number): string {
  const id = `${parentId}:g${seq}:${index}`;
  if (id.length <= MAX_ID_LENGTH) return id;
  return `${createHash('sha256').update(parentId).digest('hex')}:g${seq}:${index}`;
}
