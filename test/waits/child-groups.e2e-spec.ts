import { Durable, DurableEngine, WorkflowRegistry, type ChildGroupProgress, type ChildOutcome, type EngineOptions } from 'nestjs-durable';
import { eventually, FAST } from '../support/engine-harness.js';
import { DATABASES, openDatabase, type KindDatabase } from '../support/databases.js';

type Fn = (input: any) => Promise<unknown>;

/** Durable.startChildren: a fan-out counted on one row, waited for with one wake-up, read in pages. */
describe.each(DATABASES)('groups of children, on %s', (kind) => {
  let db: KindDatabase;
  const engines: DurableEngine[] = [];
  const parentWakes = new Map<string, number>();
  /** Children from input `gatedFrom` on wait for `gate` (a test opens it). */
  let gate: Promise<void> = Promise.resolve();
  let gatedFrom = 0;
  let open: () => void = () => {};
  const closeGate = (from = 0) => {
    gatedFrom = from;
    gate = new Promise<void>((r) => (open = r));
  };

  const workflows: Record<string, Fn> = {
    square: async (n: number) => {
      if (n >= gatedFrom) await gate;
      return Durable.step(
        'square',
        async () => {
          if (n === 13) throw new Error('unlucky');
          return n * n;
        },
        { retries: 0 },
      );
    },
    fanOut: async (input: { n: number; atLeast?: number }) => {
      parentWakes.set(Durable.runId(), (parentWakes.get(Durable.runId()) ?? 0) + 1);
      const group = await Durable.startChildren<number>('square', { count: input.n, input: (i) => i });
      const first = input.atLeast === undefined ? null : await group.wait({ atLeast: input.atLeast });
      const all = await group.wait();
      let sum = 0;
      const failed: number[] = [];
      for (let from = 0; from < group.size; from += 700) {
        for (const o of await group.results({ from, limit: 700 })) {
          if (o.status === 'SUCCEEDED') sum += o.output;
          else failed.push(o.index);
        }
      }
      return { first, all, sum, failed, firstId: group.childId(0) };
    },
    fromArray: async (inputs: number[]) => {
      const group = await Durable.startChildren<number>('square', inputs, { tags: ['batch'] });
      await group.wait();
      return (await group.results()).map((o: ChildOutcome<number>) => (o.status === 'SUCCEEDED' ? o.output : o.status));
    },
    twoWaits: async (n: number) => {
      const group = await Durable.startChildren<number>('square', { count: n, input: (i) => i });
      const [some, all] = await Promise.all([group.wait({ atLeast: 3 }), group.wait()]);
      return { some: some.ended, all: all.ended };
    },
    streamed: async (n: number) => {
      const group = await Durable.startChildren<number>('square', { count: n, input: (i) => i });
      const order: Array<[number, string]> = [];
      for await (const o of group.asCompleted({ pageSize: 3 })) {
        order.push([o.index, o.status === 'SUCCEEDED' ? `=${o.output}` : o.status === 'FAILED' ? `FAILED:${o.error.message}` : o.status]);
        await Durable.step(`seen:${o.index}`, async () => o.status);
      }
      const first = await group.completions({ limit: 4 });
      const rest = await group.completions({ after: first.cursor, limit: 10_000 });
      return {
        order,
        pages: [first, rest].map((p) => ({ indices: p.outcomes.map((o) => o.index), cursor: p.cursor, done: p.done, ended: p.ended })),
      };
    },
    empty: async () => {
      const group = await Durable.startChildren('square', []);
      return { progress: await group.wait(), page: await group.results() };
    },
  };

  async function engine(options: EngineOptions = {}): Promise<DurableEngine> {
    const registry = new WorkflowRegistry();
    for (const [name, run] of Object.entries(workflows)) registry.register({ name, queue: 'default', options: {}, run });
    const e = new DurableEngine({ registry, connection: db.url, prisma: db.prisma, options: { ...FAST, ...options } });
    engines.push(e);
    await e.start();
    return e;
  }

  beforeAll(async () => {
    db = await openDatabase(kind, `child_groups_${kind}`);
  });
  afterEach(async () => {
    open();
    gate = Promise.resolve();
    for (const e of engines.splice(0)) await e.stop().catch(() => {});
  });
  afterAll(() => db.close());

  it('starts 2,500 children in chunks, counts them on one row, wakes the parent once for all, and reads outcomes in pages', async () => {
    const e = await engine({ concurrency: 50 });
    const h = await e.startRun<{ all: ChildGroupProgress; sum: number; failed: number[]; firstId: string }>('fanOut', { n: 2_500 });
    const out = await h.result({ timeoutMs: 120_000 });
    const expected = Array.from({ length: 2_500 }, (_, i) => (i === 13 ? 0 : i * i)).reduce((a, b) => a + b, 0);
    expect(out.all).toEqual({ total: 2_500, ended: 2_500, succeeded: 2_499, failed: 1, cancelled: 0 });
    expect(out.sum).toBe(expected);
    expect(out.failed).toEqual([13]);
    expect(out.firstId).toBe(`${h.id}:g0:0`);
    // One counter row, not one wait per child: the parent's steps are the group's start, its wait, and its pages.
    const steps = await db.query<{ name: string }>('SELECT name FROM durable_steps WHERE run_id = ? ORDER BY seq', [h.id]);
    expect(steps.map((s) => s.name)).toEqual([
      'durable.startChildren:square',
      'durable.group.wait:0',
      ...Array.from({ length: 4 }, () => 'durable.group.results'),
    ]);
    const [g] = await db.query<Record<string, unknown>>(
      'SELECT total, created, ended, succeeded, failed FROM durable_child_groups WHERE run_id = ?',
      [h.id],
    );
    expect(Object.fromEntries(Object.entries(g).map(([k, v]) => [k, Number(v)]))).toEqual({
      total: 2_500,
      created: 2_500,
      ended: 2_500,
      succeeded: 2_499,
      failed: 1,
    });
    // Executions of the parent: the first (it starts the group and suspends), and the one its group's end woke — not one per child.
    expect(parentWakes.get(h.id)).toBeLessThanOrEqual(3);
  });

  it('waits for the first n children, then for all', async () => {
    closeGate(5); // children 0-4 run, the other 35 wait until the parent has passed its first wait
    const e = await engine({ concurrency: 50 });
    const h = await e.startRun<{ first: ChildGroupProgress; all: ChildGroupProgress }>('fanOut', { n: 40, atLeast: 5 });
    await eventually(
      async () => (await db.query("SELECT 1 FROM durable_steps WHERE run_id = ? AND name = 'durable.group.wait:0'", [h.id])).length === 1,
      30_000,
      'the first wait to be over',
    );
    open();
    const out = await h.result({ timeoutMs: 60_000 });
    expect(out.first).toEqual({ total: 40, ended: 5, succeeded: 5, failed: 0, cancelled: 0 });
    expect(out.all).toMatchObject({ total: 40, ended: 40, failed: 1 });
  });

  it('takes an array of inputs and the children carry the tags given', async () => {
    const e = await engine();
    const h = await e.startRun('fromArray', [1, 2, 13, 4]);
    await expect(h.result({ timeoutMs: 30_000 })).resolves.toEqual([1, 4, 'FAILED', 16]);
    // The admin filters find the group by its tag and its parent.
    expect((await e.bulkCount('delete', { tags: ['batch'] })).matched).toBe(4);
    expect((await e.bulkCount('delete', { parentId: h.id })).matched).toBe(4);
  });

  it('streams outcomes as the children end, first ended first, while the others still run; pages of ends read on from a cursor', async () => {
    closeGate(1); // child 0 ends, the others wait for the gate
    const e = await engine({ concurrency: 50 });
    const h = await e.startRun<{
      order: Array<[number, string]>;
      pages: Array<{ indices: number[]; cursor: number; done: boolean; ended: number }>;
    }>('streamed', 16);
    // The parent took child 0's outcome while the other 15 were still running.
    await eventually(
      async () => (await db.query("SELECT 1 FROM durable_steps WHERE run_id = ? AND name = 'seen:0'", [h.id])).length === 1,
      30_000,
      "the parent to take child 0's outcome",
    );
    const [{ n: running }] = await db.query<{ n: unknown }>(
      "SELECT count(*) AS n FROM durable_runs WHERE parent_id = ? AND status NOT IN ('SUCCEEDED', 'FAILED')",
      [h.id],
    );
    expect(Number(running)).toBe(15);
    open();
    const out = await h.result({ timeoutMs: 60_000 });
    // Every child once, in the order their ends committed (durable_group_ends.ord), child 13 failed.
    const ends = await db.query<{ child_index: unknown; status: string }>(
      'SELECT child_index, status FROM durable_group_ends WHERE run_id = ? ORDER BY ord',
      [h.id],
    );
    expect(out.order.map(([i]) => i)).toEqual(ends.map((r) => Number(r.child_index)));
    expect(out.order[0]).toEqual([0, '=0']);
    expect([...out.order].sort((a, b) => a[0] - b[0])).toEqual(
      Array.from({ length: 16 }, (_, i) => [i, i === 13 ? 'FAILED:unlucky' : `=${i * i}`]),
    );
    expect(out.pages).toEqual([
      { indices: out.order.slice(0, 4).map(([i]) => i), cursor: 4, done: false, ended: 16 },
      { indices: out.order.slice(4).map(([i]) => i), cursor: 16, done: true, ended: 16 },
    ]);
  });

  it('a resumed child is counted once: its earlier end is taken back when it resumes', async () => {
    const e = await engine();
    const h = await e.startRun<{ all: ChildGroupProgress }>('fanOut', { n: 20 });
    expect((await h.result({ timeoutMs: 30_000 })).all).toMatchObject({ ended: 20, failed: 1 });
    const counters = async () =>
      Object.fromEntries(
        Object.entries(
          (
            await db.query<Record<string, unknown>>('SELECT ended, succeeded, failed FROM durable_child_groups WHERE run_id = ?', [h.id])
          )[0],
        ).map(([k, v]) => [k, Number(v)]),
      );
    // No worker while it is resumed: the counters are read before the child runs (and fails) again.
    const client = await engine({ worker: false });
    await e.stop();
    await client.resume(`${h.id}:g0:13`);
    expect(await counters()).toEqual({ ended: 19, succeeded: 19, failed: 0 });
    await engine();
    await eventually(async () => (await client.getRun(`${h.id}:g0:13`))?.status === 'FAILED');
    expect(await counters()).toEqual({ ended: 20, succeeded: 19, failed: 1 });
    // Its second end is numbered after the others: a stream of the group's ends takes it again.
    const ends = await db.query<{ ord: unknown; child_index: unknown }>(
      'SELECT ord, child_index FROM durable_group_ends WHERE run_id = ? ORDER BY ord',
      [h.id],
    );
    expect(ends.length).toBe(21);
    expect(ends.map((r) => Number(r.ord))).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    expect(Number(ends[20].child_index)).toBe(13);
    // Each end keeps the error it ended with, though the resume cleared the child's own.
    const errors = await db.query<{ error: unknown }>(
      'SELECT error FROM durable_group_ends WHERE run_id = ? AND child_index = 13 ORDER BY ord',
      [h.id],
    );
    expect(errors.map((r) => (typeof r.error === 'string' ? JSON.parse(r.error) : r.error).message)).toEqual(['unlucky', 'unlucky']);
  });

  it('two waits on one group at once both resolve (the smaller count wakes the parent first)', async () => {
    closeGate(3);
    const e = await engine();
    const h = await e.startRun<{ some: number; all: number }>('twoWaits', 12);
    await eventually(
      async () => (await db.query("SELECT 1 FROM durable_steps WHERE run_id = ? AND name = 'durable.group.wait:0'", [h.id])).length === 1,
      30_000,
      'the smaller wait to be over',
    );
    open();
    await expect(h.result({ timeoutMs: 30_000 })).resolves.toEqual({ some: 3, all: 12 });
  });

  it('an empty group resolves at once', async () => {
    const e = await engine();
    const h = await e.startRun('empty', null);
    await expect(h.result({ timeoutMs: 30_000 })).resolves.toEqual({
      progress: { total: 0, ended: 0, succeeded: 0, failed: 0, cancelled: 0 },
      page: [],
    });
  });

  it('counts cancelled children, and cancelling the parent cancels the whole group', async () => {
    closeGate();
    const e = await engine({ concurrency: 5 });
    const h = await e.startRun<{ all: ChildGroupProgress }>('fanOut', { n: 30 });
    const children = (id: string) => db.query<{ n: unknown }>('SELECT count(*) AS n FROM durable_runs WHERE parent_id = ?', [id]);
    await eventually(async () => Number((await children(h.id))[0].n) === 30);
    await e.cancel(`${h.id}:g0:7`);
    await e.cancel(`${h.id}:g0:8`);
    open();
    const out = await h.result({ timeoutMs: 60_000 });
    expect(out.all).toMatchObject({ total: 30, ended: 30, cancelled: 2 });

    closeGate();
    const h2 = await e.startRun('fanOut', { n: 30 });
    await eventually(async () => Number((await children(h2.id))[0].n) === 30);
    await e.cancel(h2.id);
    open();
    const left = await db.query<{ n: unknown }>(
      "SELECT count(*) AS n FROM durable_runs WHERE parent_id = ? AND status NOT IN ('CANCELLED', 'SUCCEEDED', 'FAILED')",
      [h2.id],
    );
    expect(Number(left[0].n)).toBe(0);
    // The cascade's ends are counted like any other: every child that was not done is counted cancelled.
    const [g] = await db.query<Record<string, unknown>>('SELECT ended, succeeded, cancelled FROM durable_child_groups WHERE run_id = ?', [
      h2.id,
    ]);
    expect(Number(g.ended)).toBe(30);
    expect(Number(g.succeeded) + Number(g.cancelled)).toBe(30);
    expect(Number(g.cancelled)).toBeGreaterThan(0);
    const [numbered] = await db.query<{ n: unknown; ends: unknown; top: unknown }>(
      'SELECT count(DISTINCT child_index) AS n, count(*) AS ends, max(ord) AS top FROM durable_group_ends WHERE run_id = ?',
      [h2.id],
    );
    expect([Number(numbered.n), Number(numbered.ends), Number(numbered.top)]).toEqual([30, 30, 30]);
  });
});
