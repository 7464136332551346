import { WorkflowHandle, type HandleBackend } from './handle.js';
import { LocalResults } from './local-results.js';

/** result() and the ends of runs in this process: the hand-over, without a read back or a poll interval. */
describe('WorkflowHandle.result() with a run that ends in this process', () => {
  /** A backend whose rows say `rows` in turn (the last one from then on), before which `beforeAnswer` runs. */
  function backend(rows: string[], beforeAnswer: (read: number) => void = () => {}) {
    const local = new LocalResults();
    let reads = 0;
    const b: HandleBackend = {
      fetchResult: async () => {
        const status = rows[Math.min(reads, rows.length - 1)] as 'RUNNING' | 'SUCCEEDED';
        beforeAnswer(++reads);
        return { status, output: status === 'SUCCEEDED' ? 'from the row' : null, error: null };
      },
      waitLocal: (id, ms, signal) => local.wait(id, ms, signal),
    };
    const waiters = () => (local as unknown as { waiters: Map<string, Set<unknown>> }).waiters.size;
    return { b, local, reads: () => reads, waiters };
  }

  it('takes an end written while the row was being read (the read saw the run running)', async () => {
    const env = backend(['RUNNING', 'SUCCEEDED'], (read) => {
      // The run ends here after the statement read its row and before the answer arrives.
      if (read === 1) env.local.resolve('r1', { status: 'SUCCEEDED', output: '"handed over"', error: null });
    });
    await expect(new WorkflowHandle<string>('r1', 'wf', env.b).result()).resolves.toBe('handed over');
    // One read: the end was not missed and found by a second read one poll interval later.
    expect(env.reads()).toBe(1);
    expect(env.waiters()).toBe(0);
  });

  it('leaves no wait behind when the row already has the end', async () => {
    const env = backend(['SUCCEEDED']);
    await expect(new WorkflowHandle<string>('r1', 'wf', env.b).result()).resolves.toBe('from the row');
    expect(env.reads()).toBe(1);
    expect(env.waiters()).toBe(0);
  });

  it('reads the row again after the poll interval when no end comes here, then leaves no wait behind', async () => {
    const env = backend(['RUNNING', 'SUCCEEDED']);
    await expect(new WorkflowHandle<string>('r1', 'wf', env.b).result()).resolves.toBe('from the row');
    expect(env.reads()).toBe(2);
    expect(env.waiters()).toBe(0);
  });
});
