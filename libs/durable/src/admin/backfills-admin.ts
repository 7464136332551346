import { backfills } from '../engine/backfills.js';
import type { AdminContext } from './admin-context.js';

/** Backfills (runs whose workflow calls Durable.backfill): their progress, pause and resume. */
export class BackfillsAdmin {
  constructor(private readonly c: AdminContext) {}

  /** The newest backfills with rows done, estimate, rate and time left. */
  async list(limit: number) {
    const list = await backfills(this.c.readStore, limit);
    return { backfills: list };
  }

  /** Pauses a backfill after its current batch. */
  async pause(id: string) {
    await this.c.engine.pauseBackfill(id);
    return { id, paused: true };
  }

  /** Lets a paused backfill go on. */
  async resume(id: string) {
    await this.c.engine.resumeBackfill(id);
    return { id, paused: false };
  }
}
