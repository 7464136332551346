import { isConnectionError } from '../store/connection-errors.js';
import { insertRuns, insertRunsClaimed } from '../store/runs.js';
import type { ClaimedRun, NewRun } from '../store/rows.js';
import type { Store } from '../store/store.js';
import { WriteBatcher } from '../worker/write-batcher.js';
import { insertEachPartition } from './start-retry.js';

/**
 * Group commit for starts made outside a caller's transaction: concurrent start() calls of this
 * process (one per request, say) go to the database together, as one multi-row INSERT — one round
 * trip and one commit for all of them. A start is sent at once when no other start statement is in
 * flight (or the one in flight has stalled: see WriteBatcher), so a lone start waits for nothing. Each caller still gets its own answer,
 * and only once the statement has committed: its run is durable when start() returns.
 */
export interface StartBatcher {
  /** Inserts a PENDING run that is due now; false when its id existed already. */
  pending(run: NewRun): Promise<boolean>;
  /**
   * Inserts a run already leased to this worker (a slot is reserved for it); null when its id existed
   * already; 'queued' when its queue turned out to have cluster-wide limits (inserted PENDING: the claim takes it).
   */
  claimed(run: NewRun): Promise<ClaimedRun | 'queued' | null>;
}

export function startBatcher(store: Store, lease: { owner: string; ms: number }, appVersion: string | null): StartBatcher {
  const pending = new WriteBatcher<NewRun, Settled<boolean>>(
    isolated(async (runs) => {
      const inserted = new Set(await insertEachPartition(store, runs, (s, group) => insertRuns(s, group, appVersion)));
      return runs.map((r) => inserted.has(r.id));
    }, false),
  );
  // A second try after a first that committed (only its answer lost) finds its runs leased to this
  // worker already: the start returns them as 'existing', and they run once their lease expires.
  const claimed = new WriteBatcher<NewRun, Settled<ClaimedRun | 'queued' | null>>(
    isolated(async (runs) => {
      const inserted = new Map(await insertEachPartition(store, runs, (s, group) => insertRunsClaimed(s, group, lease, appVersion)));
      return runs.map((r) => inserted.get(r.id) ?? null);
    }, null),
  );
  return { pending: async (r) => settle(await pending.add(r)), claimed: async (r) => settle(await claimed.add(r)) };
}

/** One start's outcome within a batch. */
type Settled<R> = { ok: R } | { error: unknown };
const settle = <R>(s: Settled<R>): R => {
  if ('error' in s) throw s.error;
  return s.ok;
};

/**
 * A batch's flush with each caller's fate its own:
 *  - an id given twice in one batch is inserted once; the later starts get `existing` (the id
 *    exists once the statement commits, as if they had come a moment later);
 *  - a statement refused because of one run's data (not a lost connection: that is tried once more,
 *    partition by partition, then fails them all) is retried one run at a time, in order, so only the
 *    start at fault fails.
 */
function isolated<R>(write: (runs: NewRun[]) => Promise<R[]>, existing: R): (runs: NewRun[]) => Promise<Settled<R>[]> {
  return async (runs) => {
    const first = new Map<string, number>();
    runs.forEach((r, i) => first.has(r.id) || first.set(r.id, i));
    const distinct = runs.filter((r, i) => first.get(r.id) === i);
    try {
      const written = await write(distinct);
      const byId = new Map(distinct.map((r, i) => [r.id, written[i]]));
      return runs.map((r, i) => ({ ok: first.get(r.id) === i ? byId.get(r.id)! : existing }));
    } catch (err) {
      if (runs.length === 1 || isConnectionError(err)) throw err;
      const out: Settled<R>[] = [];
      for (const r of runs) {
        try {
          out.push({ ok: (await write([r]))[0] });
        } catch (e) {
          out.push({ error: e });
        }
      }
      return out;
    }
  };
}
