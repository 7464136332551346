import type { DurableEngine } from '../engine/durable-engine.js';
import { TestWaitTimeoutError } from '../errors/index.js';
import { unsettledWork } from './virtual-clock.js';

/** The longest a kit wait sleeps between two looks at the database when nothing wakes it earlier. */
export const LOOK_AGAIN_MS = 10;

/**
 * Wakes a waiting test as soon as an execution in this process ends (a run finished, suspended or
 * stopped), or after `ms` at most (work of another process, a step still running): a wait never
 * sleeps a fixed interval past the moment its answer changed.
 */
export class ExecutionEnds {
  private wakeUp: (() => void) | null = null;
  private readonly unsubscribe: () => void;

  constructor(engine: DurableEngine) {
    this.unsubscribe = engine.onExecutionEnded(() => this.wakeUp?.());
  }

  next(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.wakeUp === done) this.wakeUp = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }

  close(): void {
    this.wakeUp?.();
    this.unsubscribe();
  }
}

/**
 * Resolves when the engine has nothing left to do now (see DurableTestingModule.settle()). Work it
 * could start — a run due, a schedule due, a deadline passed — is handed to it at once (claim,
 * scheduler read, sweep), as a wake-up would in production, instead of waiting for its poll; runs
 * executing here are waited for by their end, not by polling.
 */
export async function settleEngine(engine: DurableEngine, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  const names = engine.registry.names();
  const ends = new ExecutionEnds(engine);
  try {
    let quiet = 0;
    for (;;) {
      const work = await unsettledWork(engine.storeForTools, names, engine.options.schedules);
      if (!work.runs.length && !work.schedules) {
        // Confirmed by a second look: an execution that ended between two statements (its end
        // committed, the claim of what it woke not sent yet) is seen by one of them.
        if (++quiet === 2) return;
        continue;
      }
      quiet = 0;
      if (Date.now() > end) {
        const runs = work.runs.map((r) => `${r.id} (${r.workflow}, ${r.status})`).join(', ');
        throw new TestWaitTimeoutError(
          `settle(): the engine still had work after ${timeoutMs} ms: ${runs || 'none'}${work.schedules ? `; ${work.schedules} schedule(s) due` : ''}. ` +
            'A step that never ends, or a workflow that keeps starting work, keeps it busy; pass { timeoutMs } for longer work.',
        );
      }
      const overdue = work.runs.some((r) => r.overdue);
      if (overdue || work.schedules || work.runs.some((r) => r.status !== 'RUNNING')) await engine.timeMoved({ sweep: overdue });
      await ends.next(LOOK_AGAIN_MS);
    }
  } finally {
    ends.close();
  }
}
