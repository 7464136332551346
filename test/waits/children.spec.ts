import { Durable, Step, WorkflowFailedError } from 'nestjs-durable';
import { EngineHarness, eventually, STEADY } from '../support/engine-harness.js';

/** Durable.startChild: fan-out / fan-in, results and errors, cascading cancel and resume. */
describe('waits: child workflows', () => {
  let h: EngineHarness;
  const leafRuns: number[] = [];
  class Steps {
    @Step() async square(i: number) {
      leafRuns.push(i);
      return i * i;
    }
  }
  const steps = new Steps();

  beforeAll(async () => {
    h = await EngineHarness.create('children', STEADY);
  });
  afterAll(() => h.close());

  it('fans out 20 children and fans in their results; ids are deterministic and linked to the parent', async () => {
    const e = await h.engine(
      {
        fanOut: async (n: number) => {
          const children = await Promise.all(Array.from({ length: n }, (_, i) => Durable.startChild<number>('leaf', i)));
          const results = await Promise.all(children.map((c) => c.result()));
          return { sum: results.reduce((a, b) => a + b, 0), ids: children.map((c) => c.id) };
        },
        leaf: async (i: number) => {
          await Durable.sleep(i * 20);
          return steps.square(i);
        },
      },
      { workerId: 'fan', concurrency: 25 },
    );
    const handle = await e.startRun('fanOut', 20);
    const out = (await handle.result({ timeoutMs: 20_000 })) as { sum: number; ids: string[] };
    expect(out.sum).toBe(Array.from({ length: 20 }, (_, i) => i * i).reduce((a, b) => a + b, 0));
    expect(out.ids).toEqual(Array.from({ length: 20 }, (_, i) => `${handle.id}:child:${i}`));
    expect([...leafRuns].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    const children = await h.query(`SELECT id, status FROM durable_runs WHERE parent_id = $1`, [handle.id]);
    expect(children).toHaveLength(20);
    expect(children.every((c) => c.status === 'SUCCEEDED')).toBe(true);
    // The 20 startChild calls of the Promise.all went into one statement (one transaction time).
    expect(await h.query(`SELECT count(DISTINCT created_at)::int AS n FROM durable_runs WHERE parent_id = $1`, [handle.id])).toEqual([
      { n: 1 },
    ]);
    const run = await e.getRun(handle.id);
    expect(run?.steps.map((s) => s.name.split(':')[0])).toEqual([
      ...Array(20).fill('durable.startChild'),
      ...Array(20).fill('durable.result'),
    ]);
  });

  it("never loses a child's wake-up: parents that suspend at once are woken by children ending at random moments", async () => {
    const e = await h.engine(
      {
        impatient: async (n: number) => {
          let total = 0;
          for (let round = 0; round < 3; round++) {
            const kids = await Promise.all(Array.from({ length: n }, (_, i) => Durable.startChild<number>('jittery', i)));
            for (const k of kids) total += await k.result(); // one at a time: many suspensions
          }
          return total;
        },
        jittery: async (i: number) => {
          await new Promise((r) => setTimeout(r, Math.random() * 30));
          return i;
        },
      },
      { workerId: 'impatient', suspendGraceMs: 0, waitRecheckMs: 600_000, concurrency: 40 },
    );
    const parents = await Promise.all([1, 2, 3].map(() => e.startRun('impatient', 8)));
    for (const p of parents) expect(await p.result({ timeoutMs: 30_000 })).toBe(3 * 28);
  });

  it('a failed child rejects result() with WorkflowFailedError in the parent, which may handle it', async () => {
    const e = await h.engine(
      {
        careful: async () => {
          const c = await Durable.startChild('failingChild', 'x');
          try {
            await c.result();
            return 'no error?';
          } catch (err) {
            return { caught: (err as Error).name, message: (err as Error).message, child: c.id };
          }
        },
        failingChild: async () => {
          throw new Error('child broke');
        },
      },
      { workerId: 'failing' },
    );
    const out = (await (await e.startRun('careful', null)).result({ timeoutMs: 10_000 })) as { caught: string; message: string };
    expect(out.caught).toBe(WorkflowFailedError.name);
    expect(out.message).toMatch(/child broke/);
  });

  it('cancelling a parent cancels its descendants; resume continues all of them', async () => {
    const e = await h.engine(
      {
        tree: async () => {
          const kids = await Promise.all([Durable.startChild<string>('middle', 1), Durable.startChild<string>('middle', 2)]);
          return Promise.all(kids.map((k) => k.result()));
        },
        middle: async (n: number) => {
          const grandchild = await Durable.startChild<string>('bottom', n);
          return `middle ${n} / ${await grandchild.result()}`;
        },
        bottom: async (n: number) => `bottom ${n}: ${await Durable.recv<string>('go')}`,
      },
      { workerId: 'tree', suspendGraceMs: 50 },
    );
    const handle = await e.startRun('tree', null);
    const all = async () =>
      h.query<{ id: string; status: string }>(`SELECT id, status FROM durable_runs WHERE id = $1 OR id LIKE $2 ORDER BY id`, [
        handle.id,
        `${handle.id}:%`,
      ]);
    await eventually(
      async () => (await all()).length === 5 && (await all()).every((r) => r.status === 'WAITING'),
      10_000,
      'the tree to wait',
    );
    await e.cancel(handle.id);
    expect((await all()).map((r) => r.status)).toEqual(Array(5).fill('CANCELLED'));
    const events = await e.getRunEvents(`${handle.id}:child:0:child:0`);
    expect(events.at(-1)).toMatchObject({ kind: 'cancelled', detail: { by: 'ancestor', root: handle.id } });

    await e.resume(handle.id);
    expect((await all()).map((r) => r.status).every((s) => s === 'PENDING' || s === 'RUNNING' || s === 'WAITING')).toBe(true);
    for (const n of [0, 1]) {
      const bottom = `${handle.id}:child:${n}:child:0`;
      await eventually(async () => (await all()).find((r) => r.id === bottom)?.status === 'WAITING', 10_000, 'bottom to wait again');
      await e.send(bottom, 'go', `go${n}`);
    }
    expect(await handle.result({ timeoutMs: 10_000 })).toEqual(['middle 1 / bottom 1: go0', 'middle 2 / bottom 2: go1']);
  });

  it('parent and child talk with Durable.send / Durable.recv, exactly once across replays', async () => {
    const e = await h.engine(
      {
        talker: async () => {
          const child = await Durable.startChild<string>('echo', Durable.runId());
          await Durable.send(child.id, 'question', 'ping');
          await Durable.sleep(700); // suspends: the rest is a replay, which must not send again
          const answer = await Durable.recv<string>('answer', { timeoutMs: 10_000 });
          return { answer, result: await child.result() };
        },
        echo: async (parent: string) => {
          const q = await Durable.recv<string>('question', { timeoutMs: 10_000 });
          await Durable.send(parent, 'answer', `${q} → pong`);
          return 'echoed';
        },
      },
      { workerId: 'talk', inMemoryWaitMaxMs: 200 },
    );
    const handle = await e.startRun('talker', null);
    expect(await handle.result({ timeoutMs: 10_000 })).toEqual({ answer: 'ping → pong', result: 'echoed' });
    const msgs = await h.query(`SELECT run_id, topic, payload FROM durable_messages WHERE run_id = $1 OR run_id = $2 ORDER BY id`, [
      handle.id,
      `${handle.id}:child:0`,
    ]);
    expect(msgs).toEqual([
      { run_id: `${handle.id}:child:0`, topic: 'question', payload: 'ping' },
      { run_id: handle.id, topic: 'answer', payload: 'ping → pong' },
    ]);
    expect((await e.getRun(handle.id))?.leaseEpoch).toBeGreaterThan(1);
  });

  it('with cancelChildren: false, cancelling a parent leaves its children running', async () => {
    const e = await h.engine(
      {
        loneParent: async () => (await Durable.startChild<string>('loneChild', null)).result(),
        loneChild: async () => Durable.recv<string>('go'),
      },
      { workerId: 'nocascade', cancelChildren: false, suspendGraceMs: 50 },
    );
    const handle = await e.startRun('loneParent', null);
    const child = `${handle.id}:child:0`;
    await eventually(
      async () => (await h.query(`SELECT status FROM durable_runs WHERE id = $1`, [child]))[0]?.status === 'WAITING',
      10_000,
      'child waiting',
    );
    await e.cancel(handle.id);
    expect((await h.query(`SELECT status FROM durable_runs WHERE id = $1`, [child]))[0].status).toBe('WAITING');
    await e.send(child, 'go', 'alone');
    expect(await e.handle(child).result({ timeoutMs: 5_000 })).toBe('alone');
  });

  it('startChild of an unknown workflow fails the parent with UnknownWorkflowError; outside a workflow it is a typed error', async () => {
    const e = await h.engine({ badParent: async () => Durable.startChild('nope', null) }, { workerId: 'bad' });
    await expect((await e.startRun('badParent', null)).result({ timeoutMs: 5_000 })).rejects.toThrow(/No workflow named "nope"/);
    await expect(Durable.startChild('leaf', 1)).rejects.toThrow(/inside a running workflow/);
  });
});
