import { DeterminismError } from '../errors/index.js';
import type { RecordedStep } from '../store/rows.js';
import { isDeclaredStep } from '../definitions/step-methods.js';

/** Step name of the marker Durable.patched(id) records. */
export const patchStepName = (id: string): string => `durable.patch:${id}`;
const isPatchMarker = (name: string): boolean => name.startsWith('durable.patch:');
const isWait = (name: string): boolean =>
  name === 'durable.sleep' || name.startsWith('durable.recv:') || name.startsWith('durable.result:');

/** Where a durable operation of the code lands in the run: its position (step seq) and the checkpoint recorded there, if any. */
export interface StepMatch {
  seq: number;
  recorded: RecordedStep | undefined;
}

/**
 * Matches the durable operations a workflow calls, in call order, to the steps recorded for its run
 * (by an earlier execution, perhaps of older code). The rule, in order of the recorded positions:
 *
 * - the checkpoint at the next position has the operation's name: it is the operation's (replay);
 * - nothing is recorded there: the operation is new work at that position (the run's frontier, or a
 *   position a crash left empty, e.g. one step of a Promise.all that never finished);
 * - a patch marker the code no longer asks for is passed over (a retired Durable.patched());
 * - another step is recorded there, and the operation's name is recorded further on: the steps in
 *   between were removed from the code, and the run has passed them — they are skipped. Calling one
 *   of them later means they were moved, not removed: DeterminismError 'reordered'; so does starting
 *   new work past the record while a skipped step is still a @Step() method of the code (it could
 *   be called after that work; a step removed from this workflow only needs Durable.patched());
 * - the operation is a wait (recv, sleep, a child's result) that is nowhere ahead, and every step
 *   recorded from here on is a step no @Step() method declares any more (or a patch marker): they
 *   were removed after the run passed them, and the run waits right after them (e.g. suspended in a
 *   recv); skipped, and the wait is new work;
 * - otherwise: the step changed, or one was added where the run has already been without
 *   Durable.patched(): DeterminismError 'changed'. (Only a wait may follow removed steps at the end
 *   of a run's record: a new step there could be an insertion in front of the recorded one, and it
 *   would run before the replay found out. Removing those needs Durable.patched().)
 *
 * So adding steps where a run has not been yet, adding steps anywhere behind Durable.patched(), and
 * removing steps a run has passed all replay; renaming, changing and reordering recorded steps do not.
 * Positions stay the run's step seqs: the recorded history reads in the order it happened.
 */
export class StepMatcher {
  private cursor = 0;
  private readonly bySeq: Map<number, RecordedStep>;
  private readonly lastSeq: number;
  /** Recorded steps skipped as removed, by name (the first of each): calling one later is a reorder. */
  private readonly skipped = new Map<string, { step: RecordedStep; by: string }>();

  constructor(
    private readonly runId: string,
    steps: readonly RecordedStep[],
  ) {
    this.bySeq = new Map(steps.map((s) => [s.seq, s]));
    this.lastSeq = steps.reduce((m, s) => Math.max(m, s.seq), -1);
  }

  /** The position the next operation takes if its checkpoint is where expected (or it is new). */
  get position(): number {
    return this.cursor;
  }

  /** Every step recorded when the execution began, in seq order. */
  recordedSteps(): RecordedStep[] {
    return [...this.bySeq.values()].sort((a, b) => a.seq - b.seq);
  }

  recordedStep(seq: number): RecordedStep | undefined {
    return this.bySeq.get(seq);
  }

  /** The position and checkpoint of the next durable operation, called `name`; DeterminismError when the code departs from the record. */
  take(name: string): StepMatch {
    for (;;) {
      const r = this.bySeq.get(this.cursor);
      if (!r) {
        this.throwIfSkipped(name);
        if (this.cursor > this.lastSeq) this.throwIfSkippedStillDeclared();
        return { seq: this.cursor++, recorded: undefined };
      }
      if (r.name === name) {
        this.cursor++;
        return { seq: r.seq, recorded: r };
      }
      if (isPatchMarker(r.name)) {
        this.cursor++;
        continue;
      }
      this.throwIfSkipped(name);
      const ahead = this.ahead(name);
      if (ahead !== null) {
        this.skip(ahead, name);
        this.cursor = ahead + 1;
        return { seq: ahead, recorded: this.bySeq.get(ahead) };
      }
      if (!isWait(name) || !this.restRemoved()) throw new DeterminismError(this.runId, r.seq, r.name, name, 'changed');
      this.skip(this.lastSeq + 1, name);
      this.cursor = this.lastSeq + 1;
      return { seq: this.cursor++, recorded: undefined };
    }
  }

  /**
   * Durable.patched(id): its marker recorded at the next position (true), or nothing recorded there
   * and nothing after it (the run reaches the patch with this code: a new marker at that position,
   * true), or null when the run went past this point with code that had no such patch (false: the
   * marker takes no position, so the old path replays where it was recorded).
   */
  takePatch(name: string): StepMatch | null {
    const r = this.bySeq.get(this.cursor);
    if (r?.name === name) return { seq: this.cursor++, recorded: r };
    if (r || this.cursor <= this.lastSeq) return null;
    return { seq: this.cursor++, recorded: undefined };
  }

  private ahead(name: string): number | null {
    for (let s = this.cursor + 1; s <= this.lastSeq; s++) if (this.bySeq.get(s)?.name === name) return s;
    return null;
  }

  /** Marks the recorded steps from the cursor up to `until` (excluded) as removed, skipped for `by`. */
  private skip(until: number, by: string): void {
    for (let s = this.cursor; s < until; s++) {
      const gone = this.bySeq.get(s);
      if (gone && !isPatchMarker(gone.name) && !this.skipped.has(gone.name)) this.skipped.set(gone.name, { step: gone, by });
    }
  }

  /** Every step recorded from the cursor on is a patch marker or a step no @Step() method of the code declares (not a durable wait, send, …). */
  private restRemoved(): boolean {
    for (let s = this.cursor; s <= this.lastSeq; s++) {
      const r = this.bySeq.get(s);
      if (r && !isPatchMarker(r.name) && (r.name.startsWith('durable.') || isDeclaredStep(r.name) || r.status === 'WAITING')) return false;
    }
    return true;
  }

  /**
   * New work is about to start past the record while a skipped step is still a @Step() of the code:
   * it may have been moved below, not removed, and would then run again after the new work. Fail
   * now, before any new work runs (and so that verify sees it).
   */
  private throwIfSkippedStillDeclared(): void {
    for (const gone of this.skipped.values()) {
      if (isDeclaredStep(gone.step.name)) throw new DeterminismError(this.runId, gone.step.seq, gone.step.name, gone.by, 'reordered');
    }
  }

  private throwIfSkipped(name: string): void {
    const gone = this.skipped.get(name);
    if (gone) throw new DeterminismError(this.runId, gone.step.seq, gone.step.name, gone.by, 'reordered');
  }
}
