import { DurableError } from './durable-error.js';

/** A step whose effect was undone (or is being undone) by its compensation. */
export interface UndoneStep {
  seq: number;
  step: string;
  /** The compensation step that undid it (`compensate:<step>`), or null while the run's cancel has not run it yet. */
  undoneBy: { seq: number; step: string } | null;
}

/**
 * fork() was refused: the steps before `fromStep` include steps whose effects were undone by their
 * compensations (the run was cancelled with compensation, failed and compensated, or called
 * Durable.compensate()). Reusing their checkpoints would skip work that no longer holds (a stock
 * reservation released, a charge refunded). Nothing was created: fork from `maxFromStep` or earlier,
 * so that those steps run again.
 */
export class UndoneStepsError extends DurableError {
  constructor(
    readonly runId: string,
    readonly fromStep: number,
    readonly undone: UndoneStep[],
    /** The highest fromStep a fork of this run accepts: the first undone step. */
    readonly maxFromStep: number,
  ) {
    const list = undone
      .slice(0, 8)
      .map((u) => `#${u.seq} ${u.step}${u.undoneBy ? ` (undone by #${u.undoneBy.seq} ${u.undoneBy.step})` : ' (being undone)'}`)
      .join(', ');
    super(
      'UNDONE_STEPS',
      `Cannot fork run "${runId}" from step ${fromStep}: it would reuse the checkpoints of steps whose effects were undone: ` +
        `${list}${undone.length > 8 ? ', …' : ''}. Nothing was created. Fork from step ${maxFromStep} or earlier, so that they run again.`,
    );
  }
}
