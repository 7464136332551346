import { WorkflowHandle, type HandleBackend } from './handle.js';
import { LocalResults } from './local-results.js';

/** result() and the ends of runs in this process: the hand-over, without a read back or a poll interval. */
describe('WorkflowHandle.result() with a run that ends in this process', () => {
  /** A backend whose rows say `rows` in turn (the last one from then on), before which `beforeAnswer` runs. */
  function backend(rows: string[], beforeAnswer: (read: number) => void | Promise<void> = () => {}, executesHere?: () => boolean) {
    const local = new LocalResults();
    let reads = 0;
    const b: HandleBackend = {
      executesHere,
      fetchResult: async () => {
        const status = rows[Math.min(reads, rows.length - 1)] as 'RUNNING' | 'SUCCEEDED' | 'CANCELLED';
        await beforeAnswer(++reads);
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

  it('reads nothing while the run executes here: its execution hands the end over', async () => {
    let executing = true;
    const env = backend(
      ['RUNNING'],
      () => {},
      () => executing,
    );
    const result = new WorkflowHandle<string>('r1', 'wf', env.b).result();
    await new Promise((r) => setTimeout(r, 30)); // past the first poll intervals (10, 20 ms)
    executing = false;
    env.local.resolve('r1', { status: 'SUCCEEDED', output: '"handed over"', error: null });
    await expect(result).resolves.toBe('handed over');
    expect(env.reads()).toBe(0);
    expect(env.waiters()).toBe(0);
  });

  it('reads the row once the execution here ended without handing an end over (stopped, suspended)', async () => {
    let executing = true;
    const env = backend(
      ['SUCCEEDED'],
      () => {},
      () => executing,
    );
    const result = new WorkflowHandle<string>('r1', 'wf', env.b).result();
    executing = false;
    env.local.resolve('r1'); // what the worker tells when an execution ends without an end of its own
    await expect(result).resolves.toBe('from the row');
    expect(env.reads()).toBe(1);
  });

  it('still reads the row once the longest poll interval has passed while the run executes here', async () => {
    // Another process cancelled the run and its notice did not arrive: the execution here goes on, the row says so.
    const env = backend(
      ['CANCELLED'],
      () => {},
      () => true,
    );
    const t0 = Date.now();
    await expect(new WorkflowHandle<string>('r1', 'wf', env.b).result()).rejects.toThrow(/cancel/i);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1_000);
    expect(env.reads()).toBe(1);
  });

  it('pauses between reads however long a read takes (the wait started before it)', async () => {
    // Reads of 40 ms, longer than the first poll intervals (10, 20 ms): a wait timed from before the
    // read would be over when it returns, and the reads would follow each other without a pause.
    const started: number[] = [];
    const env = backend(['RUNNING', 'RUNNING', 'RUNNING', 'SUCCEEDED'], async () => {
      started.push(Date.now());
      await new Promise((r) => setTimeout(r, 40));
    });
    await expect(new WorkflowHandle<string>('r1', 'wf', env.b).result()).resolves.toBe('from the row');
    const gaps = started.slice(1).map((t, i) => t - started[i]);
    // Each gap is the read (40 ms) and then the poll interval (10, 20, 40 ms), less a timer's slack.
    expect(gaps.map((g, i) => g >= 40 + 10 * 2 ** i - 5)).toEqual([true, true, true]);
  });

  it('reads the row before it times out a run that executes here', async () => {
    const env = backend(
      ['SUCCEEDED'],
      () => {},
      () => true,
    );
    // This process still executes it, but its end is in the row (its answer not yet back here).
    await expect(new WorkflowHandle<string>('r1', 'wf', env.b).result({ timeoutMs: 0 })).resolves.toBe('from the row');
    expect(env.reads()).toBe(1);
  });
});
