import type { StatsRows } from '../store/admin-stats.js';
import { RUN_STATUSES, type RunStatus } from '../store/rows.js';

type Counts = Record<RunStatus, number>;
/** Every run status with 0. */
export const zeroCounts = (): Counts => Object.fromEntries(RUN_STATUSES.map((s) => [s, 0])) as Counts;

const MINUTE = 60_000;

export interface Series {
  minute: string;
  started: number;
  succeeded: number;
  failed: number;
  cancelled: number;
}

/** Rows of the stats statements → per workflow/queue blocks with a 60-minute series each. */
export function assembleStats(rows: StatsRows, windowMinutes: number) {
  const now = Date.parse(rows.dbNow);
  const first = Date.parse(rows.currentMinute) - 59 * MINUTE;
  const emptySeries = (): Series[] =>
    Array.from({ length: 60 }, (_, i) => ({
      minute: new Date(first + i * MINUTE).toISOString(),
      started: 0,
      succeeded: 0,
      failed: 0,
      cancelled: 0,
    }));
  const block = () => ({ counts: zeroCounts(), expiredLeases: 0, oldestDue: null as number | null, perMinute: emptySeries() });
  const groups = new Map<string, { workflow: string; queue: string } & ReturnType<typeof block>>();
  const total = block();
  const group = (workflow: string, queue: string) => {
    const key = JSON.stringify([workflow, queue]);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { workflow, queue, ...block() }));
    return g;
  };
  for (const r of rows.active) {
    for (const b of [group(r.workflow, r.queue), total]) {
      b.counts[r.status] += r.n;
      b.expiredLeases += r.expired;
      const due = r.oldestDue ? Date.parse(r.oldestDue) : null;
      if (due !== null && (b.oldestDue === null || due < b.oldestDue)) b.oldestDue = due;
    }
  }
  for (const r of rows.finished) for (const b of [group(r.workflow, r.queue), total]) b.counts[r.status] += r.n;
  for (const r of rows.perMinute) {
    const i = Math.round((Date.parse(r.minute) - first) / MINUTE);
    if (i < 0 || i >= 60) continue;
    for (const b of [group(r.workflow, r.queue), total]) {
      const m = b.perMinute[i];
      m.started += r.started;
      m.succeeded += r.succeeded;
      m.failed += r.failed;
      m.cancelled += r.cancelled;
    }
  }
  const out = ({ oldestDue, ...b }: ReturnType<typeof block>) => ({
    ...b,
    oldestClaimableAgeMs: oldestDue === null ? null : Math.max(0, now - oldestDue),
  });
  return {
    generatedAt: rows.dbNow,
    windowMinutes,
    totals: out(total),
    groups: [...groups.values()]
      .sort((a, b) => a.workflow.localeCompare(b.workflow) || a.queue.localeCompare(b.queue))
      .map(({ workflow, queue, ...b }) => ({ workflow, queue, ...out(b) })),
  };
}
