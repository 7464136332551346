/** What the virtual clock's reads return, on either database (virtual-clock.ts, virtual-clock-mysql.ts). */

/** The clock, and the timers that come next. */
export interface VirtualClockState {
  offsetMs: number;
  nowMs: number;
  /** The earliest timer after now (epoch ms), or null if none. */
  nextTimerMs: number | null;
  /** The earliest deadline of an unfinished run (epoch ms, passed or not), or null. */
  nextDeadlineMs: number | null;
}

/** A run the engine could still work on now; `overdue`: past its deadline. */
export interface UnsettledRun {
  id: string;
  workflow: string;
  status: string;
  overdue: boolean;
}
