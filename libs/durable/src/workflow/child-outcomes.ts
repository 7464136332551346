import { decode } from '../codec/codec.js';

/** One child of a group, as results(), completions() and asCompleted() read it. */
export type ChildOutcome<T = unknown> =
  | { index: number; id: string; status: 'SUCCEEDED'; output: T }
  | { index: number; id: string; status: 'FAILED'; error: { name?: string; message?: string; [k: string]: unknown } }
  | { index: number; id: string; status: 'CANCELLED' }
  | { index: number; id: string; status: 'PENDING' | 'RUNNING' | 'WAITING' };

/** A child as a page in input order reads it: the status it has now, its output or error once ended. */
export function outcomeOf<T>(r: { index: number; id: string; status: string; output: unknown; error: unknown }): ChildOutcome<T> {
  if (r.status === 'SUCCEEDED') return { index: r.index, id: r.id, status: 'SUCCEEDED', output: decode(r.output) as T };
  if (r.status === 'FAILED') return { index: r.index, id: r.id, status: 'FAILED', error: (r.error ?? {}) as { message?: string } };
  return { index: r.index, id: r.id, status: r.status as 'CANCELLED' };
}

/**
 * A child as one of its group's ends reads it: the status and error it ended with. A child that is
 * gone (deleted; `id` null) comes without output, named by `childId`.
 */
export function outcomeOfEnd<T>(
  e: { index: number; id: string | null; status: string; output: unknown; error: unknown },
  childId: (index: number) => string,
): ChildOutcome<T> {
  const id = e.id ?? childId(e.index);
  if (e.status === 'SUCCEEDED')
    return { index: e.index, id, status: 'SUCCEEDED', output: (e.id === null ? undefined : decode(e.output)) as T };
  if (e.status === 'FAILED') return { index: e.index, id, status: 'FAILED', error: (e.error ?? {}) as { message?: string } };
  return { index: e.index, id, status: 'CANCELLED' };
}
