/**
 * Runs that finish in this process resolve their waiting handles at once, instead of at the
 * handle's next poll (WorkflowHandle.result polls the run row as the truth).
 */
export class LocalResults {
  private readonly waiters = new Map<string, Set<() => void>>();

  /** Resolves when the run finishes here, or after `ms` — whichever is first. */
  wait(id: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let set = this.waiters.get(id);
      if (!set) this.waiters.set(id, (set = new Set()));
      const done = () => {
        clearTimeout(timer);
        set!.delete(done);
        if (!set!.size) this.waiters.delete(id);
        resolve();
      };
      const timer = setTimeout(done, ms);
      set.add(done);
    });
  }

  /** The run finished (or changed in a way its waiters must see). */
  resolve(id: string): void {
    const set = this.waiters.get(id);
    if (set) for (const done of [...set]) done();
  }
}
