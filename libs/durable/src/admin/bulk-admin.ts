import type { BulkAction } from '../engine/bulk.js';
import type { RunFilter } from '../store/admin-list.js';
import type { AdminContext } from './admin-context.js';
import { BulkTokens } from './bulk-token.js';
import type { Query } from './params.js';

/** Bulk actions by filter: a dry run that counts and returns a signed token, then confirmed bounded batches. */
export class BulkAdmin {
  constructor(
    private readonly c: AdminContext,
    readonly tokens: BulkTokens,
  ) {}

  /**
   * Dry run of a bulk action: how many runs it would change now, and the token that confirms it
   * (runs created after this call are never touched).
   */
  async preview(p: { action: BulkAction; query: Query; filter: RunFilter; compensate: boolean }) {
    const counted = await this.c.engine.bulkCount(p.action, p.filter);
    const token = this.tokens.sign({
      action: p.action,
      query: p.query,
      compensate: p.compensate,
      position: { asOf: counted.asOf, cursor: null },
      matched: counted.matched,
      capped: counted.capped,
      done: 0,
      skipped: 0,
    });
    return {
      action: p.action,
      matched: counted.matched,
      capped: counted.capped,
      byStatus: counted.byStatus,
      asOf: counted.asOf.toISOString(),
      token,
    };
  }

  /**
   * One bounded batch of a confirmed bulk action; `token` is null in the answer when it is complete
   * (`complete` is true on the batch that reaches the end, or the matched count). `actor` (who
   * confirmed it) goes into each changed run's history, as for a single cancel or resume. The token
   * is refused (BulkTokenError) when altered, expired, used already, or for another `action`.
   */
  async execute(token: string, batchSize: number, actor: string, action: BulkAction | null = null) {
    const { token: t, release } = this.tokens.open(token, action);
    const processed = t.done + t.skipped;
    // Never more runs than the preview counted (unless its count was capped).
    const limit = t.capped ? batchSize : Math.min(batchSize, t.matched - processed);
    let r: { done: string[]; skipped: Array<{ id: string; reason: string }>; next: typeof t.position | null };
    try {
      r =
        limit > 0
          ? await this.c.engine.bulkBatch(t.action, t.filter, t.position, { limit, compensate: t.compensate, actor })
          : { done: [], skipped: [], next: null };
    } catch (err) {
      release();
      throw err;
    }
    const done = t.done + r.done.length;
    const skipped = t.skipped + r.skipped.length;
    const complete = r.next === null || (!t.capped && done + skipped >= t.matched);
    return {
      action: t.action,
      matched: t.matched,
      batch: { done: r.done.length, skipped: r.skipped.length },
      done,
      skipped,
      skippedRuns: r.skipped.slice(0, 20),
      complete,
      token: complete || !r.next ? null : this.tokens.sign({ ...t, position: r.next, done, skipped }),
    };
  }
}
