import { WriteBatcher } from '../../libs/durable/src/worker/write-batcher.js';

/**
 * The group commit's scheduling, on its own (the statements it sends are tested with Postgres in
 * start-batch, fused-end and the chaos suites): which writes go together in one statement.
 */
describe('WriteBatcher (group commit)', () => {
  /** A batcher whose statements the test ends one by one; `batches` lists what each one carried. */
  function controlled(maxInFlight?: number, stalledMs?: number) {
    const batches: string[][] = [];
    const pending: Array<() => void> = [];
    const batcher = new WriteBatcher<string, string>(
      (items) => {
        batches.push(items);
        return new Promise((resolve) => pending.push(() => resolve(items.map((i) => `${i}!`))));
      },
      maxInFlight,
      undefined,
      stalledMs,
    );
    const turn = () => new Promise((r) => setImmediate(r));
    /** Ends every statement in flight, turn after turn, until `done` settles. */
    const endAll = async (done: Promise<unknown>) => {
      let settled = false;
      void done.finally(() => (settled = true));
      while (!settled) {
        pending.splice(0).forEach((end) => end());
        await turn();
      }
    };
    return { batcher, batches, endNext: () => pending.shift()!(), endAll, turn };
  }

  it('a lone write, with nothing in flight, goes alone at the end of its turn and gets its answer', async () => {
    const { batcher, batches, endNext, turn } = controlled();
    const answer = batcher.add('alone');
    await turn();
    expect(batches).toEqual([['alone']]);
    endNext();
    expect(await answer).toBe('alone!');
  });

  it('writes of one turn of the event loop go in one statement', async () => {
    const { batcher, batches, endNext, turn } = controlled();
    const answers = Promise.all(['a', 'b', 'c'].map((w) => batcher.add(w)));
    await turn();
    expect(batches).toEqual([['a', 'b', 'c']]);
    endNext();
    expect(await answers).toEqual(['a!', 'b!', 'c!']);
  });

  it('beyond maxInFlight statements, writes queue and go together when one returns', async () => {
    const { batcher, batches, endNext, turn } = controlled(1);
    void batcher.add('a');
    await turn();
    void batcher.add('b');
    void batcher.add('c');
    await turn();
    expect(batches).toEqual([['a']]);
    endNext();
    await turn();
    await turn();
    expect(batches).toEqual([['a'], ['b', 'c']]);
  });

  it("the writes a statement's callers make as they resume go with the queue, not in a statement after it", async () => {
    // Callers that write, await, and write again (an app's requests starting runs one by one, a
    // run's step after step): when their statement returns, the queue waits for them, so callers
    // that wrote together keep writing together instead of splitting into groups of their own.
    const { batcher, batches, endNext, endAll, turn } = controlled(2, 0);
    const caller = async (name: string) => {
      await batcher.add(`${name}1`);
      await Promise.resolve(); // the caller's own work between writes (no I/O)
      await batcher.add(`${name}2`);
    };
    const x = caller('x');
    await turn();
    const y = caller('y');
    await turn();
    void batcher.add('z'); // two statements in flight: z queues
    await turn();
    expect(batches).toEqual([['x1'], ['y1']]);
    endNext(); // x1 returns: x writes x2 as it resumes
    await turn();
    await turn();
    expect(batches).toEqual([['x1'], ['y1'], ['z', 'x2']]);
    await endAll(Promise.all([x, y]));
    expect(batches.flat().sort()).toEqual(['x1', 'x2', 'y1', 'y2', 'z']);
  });

  it('a second statement goes out only once the one in flight has stalled (waits on a lock, a slow server)', async () => {
    const { batcher, batches, endNext, endAll, turn } = controlled(2, 300);
    const a = batcher.add('a');
    await turn();
    const b = batcher.add('b');
    await turn();
    await turn();
    expect(batches).toEqual([['a']]); // b waits behind a statement that has just gone out
    await new Promise((r) => setTimeout(r, 500));
    expect(batches).toEqual([['a'], ['b']]); // a is still in flight past 300 ms: b goes without it
    endNext();
    endNext();
    await endAll(Promise.all([a, b]));
  });

  it('writes behind a statement that returns before it stalls go with the next one', async () => {
    const { batcher, batches, endNext, endAll, turn } = controlled(2, 10_000);
    const a = batcher.add('a');
    await turn();
    const rest = Promise.all([batcher.add('b'), batcher.add('c')]);
    await turn();
    expect(batches).toEqual([['a']]); // not a second statement beside the first
    endNext();
    await turn();
    await turn();
    expect(batches).toEqual([['a'], ['b', 'c']]);
    await endAll(Promise.all([a, rest]));
  });
});
