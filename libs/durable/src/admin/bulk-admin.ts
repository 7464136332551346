import type { BulkAction } from '../engine/bulk.js';
import type { RunFilter } from '../store/admin-list.js';
import type { AdminContext } from './admin-context.js';
import { encodeBulkToken, type BulkToken } from './bulk-params.js';
import type { Query } from './params.js';

/** Bulk actions by filter: a dry run that counts and returns a token, then confirmed bounded batches. */
export class BulkAdmin {
  constructor(private readonly c: AdminContext) {}

  /**
   * Dry run of a bulk action: how many runs it would change now, and the token that confirms it
   * (runs created after this call are never touched).
   */
  async preview(p: { action: BulkAction; query: Query; filter: RunFilter; compensate: boolean }) {
    const counted = await this.c.engine.bulkCount(p.action, p.filter);
    const token = encodeBulkToken({
      action: p.action,
      query: p.query,
      compensate: p.compensate,
      position: { asOf: counted.asOf, cursor: null },
      matched: counted.matched,
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
   * One bounded batch of a confirmed bulk action; `token` is null in the answer when it is complete.
   * `actor` (who confirmed it) goes into each changed run's history, as for a single cancel or resume.
   */
  async execute(t: BulkToken, batchSize: number, actor: string) {
    const r = await this.c.engine.bulkBatch(t.action, t.filter, t.position, { limit: batchSize, compensate: t.compensate, actor });
    const done = t.done + r.done.length;
    const skipped = t.skipped + r.skipped.length;
    return {
      action: t.action,
      matched: t.matched,
      batch: { done: r.done.length, skipped: r.skipped.length },
      done,
      skipped,
      skippedRuns: r.skipped.slice(0, 20),
      complete: r.next === null,
      token: r.next ? encodeBulkToken({ ...t, position: r.next, done, skipped }) : null,
    };
  }
}
