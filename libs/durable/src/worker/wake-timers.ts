import type { EngineClock } from '../config/clock.js';

/** How far ahead a worker keeps a local timer for a run it suspended. */
const WAKE_HORIZON_MS = 10 * 60_000;

/**
 * Local wake-ups of runs this worker suspended until a near time: it claims them then rather than
 * at the next poll (within WAKE_HORIZON_MS; any instance's polling picks them up otherwise, or if
 * this one dies).
 */
export class WakeTimers {
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly clock: EngineClock,
    private readonly wake: (queue: string) => void,
  ) {}

  /** Wakes `queue` when `until` comes, if that is within WAKE_HORIZON_MS. */
  at(queue: string, until: Date): void {
    const ms = until.getTime() - this.clock.now();
    if (ms > WAKE_HORIZON_MS) return;
    const t = setTimeout(
      () => {
        this.timers.delete(t);
        this.wake(queue);
      },
      Math.max(0, ms) + 5,
    );
    t.unref?.();
    this.timers.add(t);
  }

  clear(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
