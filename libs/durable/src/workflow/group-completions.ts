import { InvalidArgumentError, NotInWorkflowError, RunNotFoundError } from '../errors/index.js';
import { groupCompletions } from '../store/child-groups.js';
import type { StepDefinition } from '../definitions/definitions.js';
import { currentScope } from './run-context.js';
import { invokeStep } from './step-runner.js';
import { outcomeOfEnd, type ChildOutcome } from './child-outcomes.js';

/** The most ends one completions() page reads. */
export const MAX_COMPLETIONS_PAGE = 10_000;

/** A page of a group's ends, in the order the children ended (ChildGroup.completions()). */
export interface ChildGroupCompletions<T = unknown> {
  /** The children that ended after `after`, first ended first. */
  outcomes: Array<ChildOutcome<T>>;
  /** Pass it as `after` to read on from this page. */
  cursor: number;
  /** Every child had ended when the page was read, and this page holds the last end: nothing more will come. */
  done: boolean;
  /** Children ended when the page was read, and the group's size. */
  ended: number;
  total: number;
}

const COMPLETIONS: StepDefinition = { name: 'durable.group.completions', options: { retries: 3 } };

/** Checks a page's range: `after` ≥ 0 and a size of 1…MAX_COMPLETIONS_PAGE (`limit` of completions(), `pageSize` of asCompleted()). */
export function completionsRange(
  api: 'completions' | 'asCompleted',
  after: number,
  size: number,
): InvalidArgumentError | { after: number; limit: number } {
  const sizeName = api === 'completions' ? 'limit' : 'pageSize';
  if (!Number.isInteger(after) || after < 0) {
    return new InvalidArgumentError(
      `ChildGroup.${api}(): after must be an integer ≥ 0 (0, or the cursor of the page before); got ${String(after)}.`,
      'after',
    );
  }
  if (!Number.isInteger(size) || size < 1 || size > MAX_COMPLETIONS_PAGE) {
    return new InvalidArgumentError(
      `ChildGroup.${api}(): ${sizeName} must be an integer from 1 to ${MAX_COMPLETIONS_PAGE}; got ${String(size)}.`,
      sizeName,
    );
  }
  return { after, limit: size };
}

/**
 * Reads a page of ends as a step (recorded, so a replay reads the same page). `childId` names a
 * child that is gone (not kept, or deleted): it comes with its status, without output or error.
 */
export function readCompletions<T>(
  runId: string,
  seq: number,
  range: { after: number; limit: number },
  childId: (index: number) => string,
): Promise<ChildGroupCompletions<T>> {
  return Promise.resolve(
    invokeStep(COMPLETIONS, async () => {
      const run = currentScope()?.run;
      if (!run) throw new NotInWorkflowError('ChildGroup.completions()');
      const page = await groupCompletions(run.services.store, runId, seq, range.after, range.limit);
      if (page.total === null) throw new RunNotFoundError(runId);
      const cursor = page.items.length ? page.items[page.items.length - 1].ord : range.after;
      return {
        outcomes: page.items.map((e) => outcomeOfEnd<T>(e, childId)),
        cursor,
        done: page.ended >= page.total && cursor >= page.ends,
        ended: page.ended,
        total: page.total,
      };
    }),
  ) as Promise<ChildGroupCompletions<T>>;
}
