import type { CronClock } from '../definitions/schedule.js';

/** The slots a due schedule fires now, and the next fire to store. */
export interface SlotPlan {
  /** New slots to start, oldest first (the buffered slot, if any, is not among them). */
  slots: number[];
  /** The next fire to store: the first slot not handled (in the past when the per-tick bound cut the list). */
  nextFireAt: number;
  /** The missed slots the catch-up policy leaves out: every slot ≥ `from` and < `before`; null when none is. */
  leftOut: { from: number; before: number } | null;
}

/**
 * Which slots of a schedule whose next fire is `nextFireAt` start when the scheduler reaches it at
 * `now` (all times in ms, from the database clock). Slots up to `misfireMs` late are on time and
 * start; older ones were missed (no scheduler ran, or it ran that late) and follow the catch-up
 * policy: "skip" none, "latest" the last one, "all" those at most `windowMs` old; `leftOut` says
 * which were left out. At most `maxSlots` per call: the
 * next fire stored is then the first slot left, and the next tick goes on from there. The cost is
 * bounded too: O(maxSlots + log(gap)) next-fire computations, however long the downtime.
 */
export function planSlots(
  clock: CronClock,
  nextFireAt: number,
  now: number,
  policy: { catchUp: string; windowMs: number },
  misfireMs: number,
  maxSlots: number,
): SlotPlan {
  const slots: number[] = [];
  let next = nextFireAt;
  let leftOut: SlotPlan['leftOut'] = null;
  const boundary = now - misfireMs;
  if (next < boundary) {
    if (policy.catchUp === 'all') {
      // On-time slots run whatever the window (a window shorter than the misfire tolerance must not drop them).
      const start = Math.min(now - policy.windowMs, boundary);
      let cur = next;
      if (next < start) {
        cur = clock.atOrAfter(start);
        leftOut = { from: next, before: cur };
      }
      while (cur < boundary && slots.length < maxSlots) {
        slots.push(cur);
        cur = clock.next(cur);
      }
      if (cur < boundary) return { slots, nextFireAt: cur, leftOut };
      next = cur;
    } else {
      const firstOnTime = clock.atOrAfter(boundary);
      const latest = policy.catchUp === 'latest' ? clock.lastBefore(boundary, next) : null;
      if (latest !== null) slots.push(latest);
      if ((latest ?? firstOnTime) > next) leftOut = { from: next, before: latest ?? firstOnTime };
      next = firstOnTime;
    }
  }
  while (next <= now && slots.length < maxSlots) {
    slots.push(next);
    next = clock.next(next);
  }
  return { slots, nextFireAt: next, leftOut };
}
