/**
 * The engine's one clock on the Node side. Everything that compares a time the database recorded
 * (a sleep's wake time, a recv deadline, a run's deadline) with "now", and Durable.now(), reads it
 * here. In production it is Date.now(). The testing kit (nestjs-durable/testing) moves the test
 * database's clock forward (virtual time) and sets the same offset here, so both sides agree.
 */
export class EngineClock {
  private offset = 0;

  /** Milliseconds since the epoch: Date.now() plus the virtual-time offset (0 outside tests). */
  now(): number {
    return Date.now() + this.offset;
  }

  /** How far virtual time is ahead of the system clock (ms). */
  get offsetMs(): number {
    return this.offset;
  }

  /** Sets the offset (the testing kit, after moving the database clock by the same amount). */
  setOffset(ms: number): void {
    this.offset = ms;
  }
}

/** What the testing kit may hook into a step attempt (fault injection); unset in production. */
export interface StepAttemptHooks {
  /** Called inside each attempt, before the step's code: throwing fails the attempt like the step's code would. */
  beforeAttempt?: (a: { runId: string; step: string; seq: number; attempt: number }) => void;
  /** Replaces the back-off before a retry (e.g. 0 in tests). */
  retryDelayMs?: (delayMs: number) => number;
}
