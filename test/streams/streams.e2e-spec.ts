import { getEventListeners } from 'node:events';
import { Durable, DurableEngine, InvalidArgumentError, RunNotFoundError, Step, WorkflowRegistry, type StreamChunk } from 'nestjs-durable';
import { eventually, FAST, sleep } from '../support/engine-harness.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';

type Fn = (input: any) => Promise<unknown>;

const collect = async <T>(it: AsyncIterable<StreamChunk<T>>): Promise<Array<StreamChunk<T>>> => {
  const out: Array<StreamChunk<T>> = [];
  for await (const c of it) out.push(c);
  return out;
};

/** Steps that write to a stream; `flaky` fails its first attempt after writing two of its three chunks. */
class Writers {
  failures = new Map<string, number>();

  @Step({ retries: { maxAttempts: 3, initialDelayMs: 10 } })
  async rows(key: string, n: number) {
    const out = Durable.stream<string>('rows');
    for (let i = 0; i < n; i++) {
      await out.write(`row ${i}`);
      if (i === 1 && (this.failures.get(key) ?? 0) === 0) {
        this.failures.set(key, 1);
        throw new Error('the first attempt fails after two rows');
      }
    }
    return n;
  }
}

/**
 * Durable streams on every database the engine supports: chunks in order, live, from any position;
 * written once per position across replays (a suspended run replays from its checkpoints) and retries.
 */
describe.each(DATABASES)('durable streams on %s', (kind) => {
  let db: KindDatabase;
  const engines: DurableEngine[] = [];
  const writers = new Writers();

  const workflows: Record<string, Fn> = {
    answer: async (input: { words: string[] }) => {
      const out = Durable.stream<string>('answer');
      for (const w of input.words) await out.write(w);
      await out.close();
      return input.words.length;
    },
    paced: async () => {
      const out = Durable.stream<{ n: number }>('ticks');
      await out.write({ n: 1 });
      await Durable.recv('go', { timeoutMs: 30_000 }); // suspends (past inMemoryWaitMaxMs): the run replays after it
      await out.write({ n: 2 });
      await Durable.sleep(600);
      await out.write({ n: 3 });
      return 'done';
    },
    parallel: async () => {
      const out = Durable.stream<number>('many');
      await Promise.all(Array.from({ length: 20 }, (_, i) => out.write(i)));
      return 20;
    },
    fromStep: async (input: { key: string }) => writers.rows(input.key, 3),
    afterClose: async () => {
      const out = Durable.stream('x');
      await out.close();
      await out.write('too late');
    },
    twoStreams: async () => {
      await Durable.step('writes both', async () => {
        await Durable.stream('log').write('to the log');
        await Durable.stream('answer').write('to the answer');
        await Durable.stream('log').write('to the log again');
      });
      await Durable.stream('answer').close();
      await Durable.recv('finish', { timeoutMs: 30_000 }); // the run goes on after the stream closed
    },
    failing: async () => {
      await Durable.stream('partial').write('before the failure');
      throw new Error('broke');
    },
  };

  async function engine(): Promise<DurableEngine> {
    const registry = new WorkflowRegistry();
    for (const [name, run] of Object.entries(workflows)) registry.register({ name, queue: 'default', options: {}, run });
    const e = new DurableEngine({ registry, connection: db.url, prisma: db.prisma, options: { ...FAST, inMemoryWaitMaxMs: 300 } });
    engines.push(e);
    await e.start();
    return e;
  }

  const stored = async (runId: string, stream: string) =>
    (
      await db.query<{ position: number; origin: string }>(
        'SELECT position, origin FROM durable_stream_chunks WHERE run_id = ? AND stream = ? ORDER BY position',
        [runId, stream],
      )
    ).map((r) => ({ position: Number(r.position), origin: r.origin }));

  beforeAll(async () => {
    db = await openDatabase(kind, `streams_${kind}`);
  });
  afterEach(async () => {
    for (const e of engines.splice(0)) await e.stop().catch(() => {});
  });
  afterAll(() => db.close());

  it('a reader gets every chunk in order and stops at close(); from a position, the rest', async () => {
    const e = await engine();
    const h = await e.startRun('answer', { words: ['Durable', 'streams', 'work'] });
    expect(await collect(h.stream<string>('answer'))).toEqual([
      { position: 0, value: 'Durable' },
      { position: 1, value: 'streams' },
      { position: 2, value: 'work' },
    ]);
    expect(await h.result({ timeoutMs: 10_000 })).toBe(3);
    expect((await collect(e.readStream<string>(h.id, 'answer', { from: 2 }))).map((c) => c.value)).toEqual(['work']);
    expect(await collect(e.readStream(h.id, 'answer', { from: 3 }))).toEqual([]);
    expect(await e.listStreams(h.id)).toEqual([{ stream: 'answer', chunks: 3, ended: true, lastWrittenAt: expect.any(Date) }]);
    // The writes and the close are steps of the run, like every durable operation.
    expect((await e.getRun(h.id))!.steps.map((s) => s.name)).toEqual([
      'durable.stream:answer',
      'durable.stream:answer',
      'durable.stream:answer',
      'durable.stream.end:answer',
    ]);
  });

  it('live: a reader sees a chunk while the run waits, and each chunk once although the run replayed twice', async () => {
    const e = await engine();
    const h = await e.startRun('paced', null);
    const reader = h.stream<{ n: number }>('ticks')[Symbol.asyncIterator]();
    expect((await reader.next()).value).toEqual({ position: 0, value: { n: 1 } });
    await eventually(async () => (await e.getRun(h.id))!.status === 'WAITING', 10_000, 'the run suspended in its recv');
    await e.send(h.id, 'go', true);
    expect((await reader.next()).value).toEqual({ position: 1, value: { n: 2 } });
    expect((await reader.next()).value).toEqual({ position: 2, value: { n: 3 } });
    expect((await reader.next()).done).toBe(true); // the run ended: so did its stream
    expect(await h.result({ timeoutMs: 10_000 })).toBe('done');
    const claims = (await e.getRunEvents(h.id)).filter((x) => x.kind === 'claimed' || x.kind === 'woken');
    expect(claims.length).toBeGreaterThanOrEqual(2);
    expect(await stored(h.id, 'ticks')).toEqual([
      { position: 0, origin: 'w0' },
      { position: 1, origin: 'w2' },
      { position: 2, origin: 'w4' },
    ]);
  });

  it('parallel writes are stored in call order', async () => {
    const e = await engine();
    const h = await e.startRun('parallel', null);
    await h.result({ timeoutMs: 10_000 });
    expect((await collect(h.stream<number>('many'))).map((c) => c.value)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it("a step's retried attempt does not store again the chunks the failed attempt stored", async () => {
    const e = await engine();
    const h = await e.startRun('fromStep', { key: `retry-${kind}` });
    expect(await h.result({ timeoutMs: 10_000 })).toBe(3);
    expect((await collect(h.stream<string>('rows'))).map((c) => c.value)).toEqual(['row 0', 'row 1', 'row 2']);
    expect((await stored(h.id, 'rows')).map((r) => r.origin)).toEqual(['s0.0', 's0.1', 's0.2']);
  });

  it("a failed run's stream ends with it; a write after close() fails the run with a typed error", async () => {
    const e = await engine();
    const failed = await e.startRun('failing', null);
    await expect(failed.result({ timeoutMs: 10_000 })).rejects.toThrow('broke');
    expect((await collect(failed.stream('partial'))).map((c) => c.value)).toEqual(['before the failure']);
    const closed = await e.startRun('afterClose', null);
    await expect(closed.result({ timeoutMs: 10_000 })).rejects.toThrow(/the stream "x" was closed by this run/);
  });

  it('a step writing to two streams stores every chunk; a reader past a closed stream ends while the run goes on', async () => {
    const e = await engine();
    const h = await e.startRun('twoStreams', null);
    await eventually(
      async () => (await e.listStreams(h.id)).find((s) => s.stream === 'answer')?.ended === true,
      10_000,
      'the answer closed',
    );
    expect((await collect(h.stream<string>('answer'))).map((c) => c.value)).toEqual(['to the answer']);
    expect(await collect(h.stream<string>('answer', { from: 5 }))).toEqual([]); // past the end of a closed stream: ends at once
    const log = h.stream<string>('log');
    const first = await log.next();
    expect(first.value).toEqual({ position: 0, value: 'to the log' });
    expect((await log.next()).value).toEqual({ position: 1, value: 'to the log again' });
    await e.send(h.id, 'finish', null);
    expect((await log.next()).done).toBe(true);
    expect((await stored(h.id, 'log')).map((r) => r.origin)).toEqual(['s0.0', 's0.2']);
    expect((await stored(h.id, 'answer')).map((r) => r.origin)).toEqual(['s0.1', 'w1']);
  });

  it('bad input: an unknown run, a bad position or name, a write outside a workflow', async () => {
    const e = await engine();
    await expect(collect(e.readStream('no-such-run', 'answer'))).rejects.toBeInstanceOf(RunNotFoundError);
    expect(() => e.readStream('r', 'answer', { from: -1 })).toThrow(InvalidArgumentError);
    expect(() => e.readStream('r', '', {})).toThrow(/stream name must be a non-empty string/);
    expect(() => e.readStream('r', 'answer', { pollMs: 0 })).toThrow(/pollMs/);
    expect(() => Durable.stream('')).toThrow(InvalidArgumentError);
    await expect(Durable.stream('answer').write('x')).rejects.toThrow(/can only be called inside a running workflow/);
  });

  it('a reader stops when its signal aborts', async () => {
    const e = await engine();
    const h = await e.startRun('paced', null);
    const stop = new AbortController();
    const got: unknown[] = [];
    const reading = (async () => {
      for await (const c of h.stream('ticks', { signal: stop.signal, pollMs: 10 })) got.push(c.value);
    })();
    await sleep(400);
    // It looked many times meanwhile (pollMs 10): each look took its abort listener back.
    expect(getEventListeners(stop.signal, 'abort').length).toBeLessThanOrEqual(1);
    stop.abort();
    await reading;
    expect(got).toEqual([{ n: 1 }]);
    await e.cancel(h.id);
  });
});
