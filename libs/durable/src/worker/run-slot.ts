/** The part of a queue's state that slots count in (worker.ts's QueueState). */
export interface SlotCounts {
  concurrency: number;
  /** Slots in use: runs executing code, claims in flight, reserved in-process starts. */
  busy: number;
  /** Runs whose code is done and whose end is being written: they hold no slot. */
  ending: number;
}

/**
 * The slot one run executes in. `concurrency` bounds the runs of a queue executing code at once; a
 * run whose code is done gives its slot to the next run while its end is written, so the next
 * claim goes out while the ends commit instead of after them (claims and ends overlap rather than
 * take turns). At most `concurrency` runs of a queue are ending at once besides those executing:
 * past that a run keeps its slot until its end is written.
 */
export class RunSlot {
  private state: 'executing' | 'ending' | 'done' = 'executing';

  constructor(
    private readonly counts: SlotCounts,
    /** A slot came free: the run's code is done (ending) or its execution is over (done). The worker claims again. */
    private readonly onFree: () => void,
  ) {}

  /** The run's code is done and its end is about to be written. */
  ending(): void {
    if (this.state !== 'executing' || this.counts.ending >= this.counts.concurrency) return;
    this.state = 'ending';
    this.counts.busy--;
    this.counts.ending++;
    this.onFree();
  }

  /**
   * Its end was refused (a cancel with compensation came first): the run executes code again (its
   * compensations), in a slot. It takes one back even if the queue is full meanwhile: this happens
   * only to a cancel that arrives during the few milliseconds the end is in flight.
   */
  resumed(): void {
    if (this.state !== 'ending') return;
    this.state = 'executing';
    this.counts.ending--;
    this.counts.busy++;
  }

  /** The execution is over; true when it still held its slot until now (then that slot came free). */
  done(): boolean {
    const held = this.state === 'executing';
    if (held) this.counts.busy--;
    else if (this.state === 'ending') this.counts.ending--;
    this.state = 'done';
    if (held) this.onFree();
    return held;
  }
}
