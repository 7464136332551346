/**
 * Runs that finish in this process resolve their waiting handles at once, instead of at the
 * handle's next poll (WorkflowHandle.result polls the run row as the truth).
 */
export class LocalResults {
  private readonly waiters = new Map<string, Set<(end?: LocalRunEnd) => void>>();

  /**
   * Resolves when the run finishes here (with its end, when it ended in this process: the handle
   * need not read it back), after `ms`, or when `signal` aborts — whichever is first.
   */
  wait(id: string, ms: number, signal?: AbortSignal): Promise<LocalRunEnd | undefined> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve(undefined);
      let set = this.waiters.get(id);
      if (!set) this.waiters.set(id, (set = new Set()));
      const done = (end?: LocalRunEnd) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        set!.delete(done);
        if (!set!.size) this.waiters.delete(id);
        resolve(end);
      };
      const aborted = () => done();
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', aborted, { once: true });
      set.add(done);
    });
  }

  /** The run finished (or changed in a way its waiters must see); `end`: as recorded by its end here. */
  resolve(id: string, end?: LocalRunEnd): void {
    const set = this.waiters.get(id);
    if (set) for (const done of [...set]) done(end);
  }

  /** Outputs (codec JSON) of runs that were not kept, by id, oldest first, with when they were recorded (for DELETED_KEPT_MS). */
  private readonly deleted = new Map<string, { output: string; at: number }>();

  /**
   * A run that is not kept succeeded here and its end deletes it: its handles in this process still
   * get its output. Recorded before the end is written, so that a handle that finds the row gone
   * meanwhile finds the output; it is read only when the row is gone, so an end that was not written
   * after all (its lease lost: another execution ends the run) leaves nothing wrong behind.
   */
  deletedRun(id: string, output: string): void {
    const now = Date.now();
    for (const [old, d] of this.deleted) {
      if (now - d.at < DELETED_KEPT_MS && this.deleted.size < DELETED_KEPT) break;
      this.deleted.delete(old);
    }
    this.deleted.delete(id);
    this.deleted.set(id, { output, at: now });
  }

  /** The output of a run deleted here less than DELETED_KEPT_MS ago, else undefined. */
  deletedOutput(id: string): string | undefined {
    const d = this.deleted.get(id);
    return d && Date.now() - d.at < DELETED_KEPT_MS ? d.output : undefined;
  }
}

/** How long a process keeps the outputs of deleted runs for their handles, and at most how many (memory). */
const DELETED_KEPT_MS = 60_000;
const DELETED_KEPT = 100_000;

/** A run's end as this process wrote it: its status, output and error as stored (codec JSON text, or null). */
export interface LocalRunEnd {
  status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
  output: string | null;
  error: string | null;
}
