/** The rows of groups of children (Durable.startChildren), as both databases read and write them. */
/** One chunk of a group of children (Durable.startChildren), written in one statement. */
export interface ChildGroupChunk {
  runId: string;
  epoch: number;
  /** The parent's step that starts the group. */
  seq: number;
  stepName: string;
  workflow: string;
  total: number;
  /** The group index of the chunk's first child. */
  from: number;
  ids: string[];
  /** Encoded inputs (JSON text), one per id. */
  inputs: string[];
  concurrencyKeys: Array<string | null>;
  queue: string;
  priority: number;
  delayMs: number | null;
  timeoutMs: number | null;
  appVersion: string | null;
  traceparent: string | null;
  /** The children's tags; null: the parent's. */
  tags: string[] | null;
  /** The parent's step output, on the last chunk only (null before). */
  stepOutput: string | null;
}

/** A group's counters (durable_child_groups). */
export interface ChildGroupCounts {
  seq: number;
  workflow: string;
  total: number;
  created: number;
  ended: number;
  succeeded: number;
  failed: number;
  cancelled: number;
  /** The parent waits until `ended` reaches this (0: it does not wait). */
  waitingFor: number;
}

/** One child of a group as a page reads it: output is the stored (encoded) JSON. */
export interface ChildGroupOutcome {
  index: number;
  id: string;
  status: string;
  output: unknown;
  error: unknown;
}

/** A page of a group's ends in commit order (durable_group_ends), with the group's counters read in the same snapshot. */
export interface ChildGroupCompletions {
  /** null: the group does not exist (its run was deleted). */
  total: number | null;
  ended: number;
  /** Ends numbered so far (the highest `ord`). */
  ends: number;
  /** id null: the child is gone (deleted); output is then null. error: what it failed with at this end. */
  items: Array<{ ord: number; index: number; id: string | null; status: string; output: unknown; error: unknown }>;
}

/** The rows of a completions statement (either database): the group's counters on each, an end's columns where there is one. */
export function completionsOf(
  rows: Array<Record<string, unknown>>,
  read: { output: (v: unknown) => unknown; error: (v: unknown) => unknown },
): ChildGroupCompletions {
  if (!rows.length) return { total: null, ended: 0, ends: 0, items: [] };
  return {
    total: Number(rows[0].total),
    ended: Number(rows[0].ended),
    ends: Number(rows[0].ends),
    items: rows
      .filter((r) => r.ord !== null && r.ord !== undefined)
      .map((r) => ({
        ord: Number(r.ord),
        index: Number(r.child_index),
        id: (r.id as string | null) ?? null,
        status: r.end_status as string,
        output: r.id == null ? null : (read.output(r.output) ?? null),
        error: read.error(r.error) ?? null,
      })),
  };
}

/** A durable_child_groups row as read (either database). */
export function groupCountsOf(r: Record<string, unknown>): ChildGroupCounts {
  return {
    seq: Number(r.seq),
    workflow: r.workflow as string,
    total: Number(r.total),
    created: Number(r.created),
    ended: Number(r.ended),
    succeeded: Number(r.succeeded),
    failed: Number(r.failed),
    cancelled: Number(r.cancelled),
    waitingFor: Number(r.wake_at),
  };
}
