import { Durable, WorkflowCancelledError } from 'nestjs-durable';
import type { DurableEngine } from 'nestjs-durable';
import type { PrismaClient } from '../../src/generated/prisma/client.js';
import { partitionOf, partitionSchema } from '../../libs/durable/src/store/partitions.js';
import { CitusCluster, describeCitus } from '../support/citus-cluster.js';
import { EngineHarness } from '../support/engine-harness.js';
import { recordStatements } from '../support/statement-recorder.js';

const PARTITIONS = 8;

/** Runs in distributed mode on a real Citus cluster (a coordinator and two worker nodes on this machine). */
describeCitus('distributed mode on Citus: runs', () => {
  let cluster: CitusCluster;
  let h: EngineHarness;
  let engine: DurableEngine;
  const ledger = (runId: string) => h.query<{ step: string }>('SELECT step FROM test_ledger WHERE run_id = $1 ORDER BY step', [runId]);
  /** Executions of the order workflow's first step, by run id (a fork replays it from its copy, never runs it again). */
  const reserved = new Map<string, number>();

  beforeAll(async () => {
    cluster = await CitusCluster.start();
    h = EngineHarness.on(await cluster.database('durable_citus_runs', PARTITIONS));
    // Polling only every 30 s: a run is claimed at once only when a wake-up reaches the engine.
    engine = await h.engine(
      {
        order: async (input: { n: number }) => {
          const a = await Durable.step(
            'reserve',
            async () => (reserved.set(Durable.runId(), (reserved.get(Durable.runId()) ?? 0) + 1), input.n * 2),
          );
          await Durable.step(
            'charge',
            async () => {
              await Durable.tx<PrismaClient>().$executeRaw`INSERT INTO test_ledger (run_id, step) VALUES (${Durable.runId()}, 'charge')`;
              return a + 1;
            },
            { transactional: true },
          );
          const child = await (await Durable.startChild<string>('shipment', { n: input.n })).result();
          return { a, child };
        },
        shipment: async (input: { n: number }) => Durable.step('label', async () => `label-${input.n}`),
        sleeper: async () => {
          await Durable.step('before', async () => 1);
          await Durable.sleep(120_000);
          return 'woke';
        },
        parentOfSleeper: async () => (await Durable.startChild('sleeper', {})).result(),
        refundable: async () => {
          await Durable.step(
            'charge',
            async () => {
              await Durable.tx<PrismaClient>().$executeRaw`INSERT INTO test_ledger (run_id, step) VALUES (${Durable.runId()}, 'charge')`;
              return 1;
            },
            {
              transactional: true,
              compensate: async () => {
                await h.prisma.$executeRaw`INSERT INTO test_ledger (run_id, step) VALUES (${Durable.runId()}, 'refund')`;
              },
            },
          );
          return (await Durable.startChild('sleeper', {})).result();
        },
        receiver: async () => Durable.recv<string>('note', { timeoutMs: 60_000 }),
        sender: async (input: { to: string }) => {
          await Durable.send(input.to, 'note', 'hello');
          return 'sent';
        },
        batch: async (input: { size: number }) => {
          const group = await Durable.startChildren<string>(
            'shipment',
            Array.from({ length: input.size }, (_, n) => ({ n })),
          );
          const labels: string[] = [];
          for await (const outcome of group.asCompleted({ pageSize: 7 })) if (outcome.status === 'SUCCEEDED') labels.push(outcome.output);
          const tail = Durable.stream<string>('labels');
          for (const label of labels.sort()) await tail.write(label);
          await tail.close();
          return labels.length;
        },
      },
      { pollIntervalMs: 30_000 },
    );
  }, 120_000);
  afterAll(async () => {
    await h?.close();
    await cluster?.stop();
  });

  it('runs started in the app transaction spread over the partitions, each with its steps, child and transactional write once', async () => {
    const handles: Array<Awaited<ReturnType<DurableEngine['startRun']>>> = [];
    await h.prisma.$transaction(
      async (tx) => {
        await tx.$executeRaw`INSERT INTO test_ledger (run_id, step) VALUES ('business', 'order')`;
        for (let n = 0; n < 24; n++) handles.push(await engine.startRun('order', { n }, { tx: tx as never }));
        // A few statements per start through the caller's transaction: more than Prisma's 5-s default on a loaded machine.
      },
      { timeout: 60_000 },
    );
    const ids = handles.map((hd) => hd.id);
    const results = await Promise.all(handles.map((hd) => hd.result({ timeoutMs: 60_000 })));
    expect(results).toEqual(Array.from({ length: 24 }, (_, n) => ({ a: n * 2, child: `label-${n}` })));
    for (const id of ids) expect(await ledger(id)).toEqual([{ step: 'charge' }]);
    expect(new Set(ids.map((id) => partitionOf(id, PARTITIONS))).size).toBeGreaterThan(3);
    // A run's rows are in its partition's schema, its child's next to them.
    const id = ids[0];
    const schema = partitionSchema(partitionOf(id, PARTITIONS));
    const rows = await h.query<{ id: string }>(`SELECT id FROM ${schema}.durable_runs WHERE id = $1 OR parent_id = $1 ORDER BY id`, [id]);
    expect(rows.map((r) => r.id)).toEqual([id, `${id}:child:2`].sort());
    const steps = await h.query<{ name: string }>(`SELECT name FROM ${schema}.durable_steps WHERE run_id = $1 ORDER BY seq`, [id]);
    expect(steps.map((s) => s.name).slice(0, 2)).toEqual(['reserve', 'charge']);
  }, 120_000);

  it('a run the app transaction rolled back does not exist in any partition', async () => {
    let id = '';
    await expect(
      h.prisma.$transaction(async (tx) => {
        id = (await engine.startRun('order', { n: 1 }, { tx: tx as never })).id;
        throw new Error('business rule');
      }),
    ).rejects.toThrow('business rule');
    expect(await engine.getRun(id)).toBeNull();
  });

  it('hears wake-ups sent on a worker node (where a statement that names one partition runs)', async () => {
    const id = 'woken-on-a-worker-node';
    const schema = partitionSchema(partitionOf(id, PARTITIONS));
    await h.query(`INSERT INTO ${schema}.durable_runs (id, workflow_name, queue, input) VALUES ($1, 'order', 'default', '{"n": 5}')`, [id]);
    await cluster.sql(cluster.workers[1].url(h.db.name), `SELECT pg_notify('durable_wakeup', 'default')`);
    const t0 = Date.now();
    for (; Date.now() - t0 < 15_000; await new Promise((r) => setTimeout(r, 100))) {
      if ((await engine.getRun(id))?.status === 'SUCCEEDED') break;
    }
    expect((await engine.getRun(id))?.output).toEqual({ a: 10, child: 'label-5' });
  }, 30_000);

  it('sends every statement of the hot path whole to the node of its partition: one task, no subplan, no lock across shards', async () => {
    const sent = recordStatements();
    try {
      const handles: Array<Awaited<ReturnType<DurableEngine['startRun']>>> = [];
      await h.prisma.$transaction(
        async (tx) => {
          for (let n = 0; n < 6; n++) handles.push(await engine.startRun('order', { n }, { tx: tx as never }));
        },
        { timeout: 60_000, maxWait: 30_000 }, // a loaded machine: see the test above
      );
      const many = await engine.startMany([1, 2, 3].map((n) => ({ workflow: 'shipment', input: { n } })));
      handles.push(...many, await engine.startRun('batch', { size: 5 }));
      await Promise.all(handles.map((hd) => hd.result({ timeoutMs: 60_000 })));
    } finally {
      sent.stop();
    }
    // Each statement that reached the per-run tables, explained with the parameters it was sent with.
    const partitioned = [...sent.statements].filter(([text]) => /\bdurable_p\d+\./.test(text));
    expect(partitioned.length).toBeGreaterThan(8);
    const notRouted: string[] = [];
    for (const [text, params] of partitioned) {
      const rows = await h.query<{ 'QUERY PLAN': string }>(`EXPLAIN (COSTS OFF) ${text}`, params);
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      const tasks = [...plan.matchAll(/Task Count: (\d+)/g)].map((m) => Number(m[1]));
      const routed = tasks.length === 1 && tasks[0] === 1 && !/Distributed Subplan|pull to coordinator/.test(plan);
      // Many rows at once (store/row-values.ts) go from arrays: evaluated on the coordinator, copied to the one partition's node.
      const bulk = /INSERT\/SELECT method: pull to coordinator/.test(plan) && !/Task Count|Distributed Subplan/.test(plan);
      if (!routed && !bulk) notRouted.push(`${text}\n${plan}`);
    }
    expect(notRouted).toEqual([]);
    const logs = [cluster.coordinator, ...cluster.workers].map((n) => cluster.logTail(n, 100_000)).join('\n');
    expect(logs).not.toMatch(/could not run distributed query with FOR UPDATE/);
  }, 120_000);

  it('runs a group of children next to its parent, its outcomes as they end, and a stream read live', async () => {
    const run = await engine.startRun<number>('batch', { size: 30 });
    const read: string[] = [];
    for await (const chunk of engine.readStream<string>(run.id, 'labels')) read.push(chunk.value);
    expect(await run.result({ timeoutMs: 60_000 })).toBe(30);
    expect(read).toEqual(Array.from({ length: 30 }, (_, n) => `label-${n}`).sort());
    const schema = partitionSchema(partitionOf(run.id, PARTITIONS));
    const [children] = await h.query(
      `SELECT count(*)::int AS n FROM ${schema}.durable_runs WHERE parent_id = $1 AND status = 'SUCCEEDED'`,
      [run.id],
    );
    expect(children).toEqual({ n: 30 });
  }, 90_000);

  it('cancels a run with its descendants, and resumes them', async () => {
    const parent = await engine.startRun('parentOfSleeper', {});
    const child = `${parent.id}:child:0`;
    const statusOf = async (id: string) => (await engine.getRun(id))?.status;
    for (const until = Date.now() + 20_000; (await statusOf(child)) !== 'WAITING' && Date.now() < until;)
      await new Promise((r) => setTimeout(r, 100));
    expect(await statusOf(child)).toBe('WAITING');
    await engine.cancel(parent.id);
    expect({ parent: await statusOf(parent.id), child: await statusOf(child) }).toEqual({ parent: 'CANCELLED', child: 'CANCELLED' });
    // Resumed with the child cancelled with it: the child sleeps again (its checkpoint kept), the parent waits for it.
    await engine.resume(parent.id);
    const both = async () => `${await statusOf(parent.id)} ${await statusOf(child)}`;
    for (const until = Date.now() + 20_000; (await both()) !== 'WAITING WAITING' && Date.now() < until;)
      await new Promise((r) => setTimeout(r, 100));
    expect(await both()).toBe('WAITING WAITING'); // the parent, then the child
    const steps = await h.query(`SELECT name FROM ${partitionSchema(partitionOf(child, PARTITIONS))}.durable_steps WHERE run_id = $1`, [
      child,
    ]);
    expect(steps.filter((r: { name: string }) => r.name === 'before')).toHaveLength(1);
    await expect(engine.resume(parent.id)).rejects.toMatchObject({ code: 'ILLEGAL_TRANSITION' });
    await engine.cancel(parent.id);
  }, 60_000);

  it('cancels with compensation: the run undoes its transactional step, its child is cancelled', async () => {
    const run = await engine.startRun('refundable', {});
    const child = `${run.id}:child:1`; // its second durable operation
    const statusOf = async (id: string) => (await engine.getRun(id))?.status;
    for (const until = Date.now() + 20_000; (await statusOf(child)) !== 'WAITING' && Date.now() < until;)
      await new Promise((r) => setTimeout(r, 100));
    await engine.cancel(run.id, { compensate: true });
    await expect(run.result({ timeoutMs: 30_000 })).rejects.toThrow(WorkflowCancelledError);
    expect(await ledger(run.id)).toEqual([{ step: 'charge' }, { step: 'refund' }]);
    expect(await statusOf(child)).toBe('CANCELLED');
  }, 60_000);

  it('forks a run beside its source: the steps before the fork point reused, the rest run again', async () => {
    const source = await engine.startRun('order', { n: 5 });
    await source.result({ timeoutMs: 30_000 });
    const forked = await engine.fork(source.id, 1);
    expect(partitionOf(forked.id, PARTITIONS)).toBe(partitionOf(source.id, PARTITIONS));
    expect(forked.copiedSteps).toBe(1);
    expect(await engine.handle(forked.id).result({ timeoutMs: 30_000 })).toEqual({ a: 10, child: 'label-5' });
    expect(await ledger(forked.id)).toEqual([{ step: 'charge' }]);
    expect([reserved.get(source.id), reserved.get(forked.id)]).toEqual([1, undefined]); // its first claim found the copied step
  }, 60_000);

  it("sends with Durable.send to a run in another partition: the message once, the sender's step once", async () => {
    const target = await engine.startRun<string>('receiver', {});
    let sender = '';
    for (let i = 0; !sender || partitionOf(sender, PARTITIONS) === partitionOf(target.id, PARTITIONS); i++) sender = `sender-${i}`;
    const run = await engine.startRun('sender', { to: target.id }, { id: sender });
    expect(await run.result({ timeoutMs: 30_000 })).toBe('sent');
    expect(await target.result({ timeoutMs: 30_000 })).toBe('hello');
    const messages = await h.query(
      `SELECT idempotency_key FROM ${partitionSchema(partitionOf(target.id, PARTITIONS))}.durable_messages WHERE run_id = $1`,
      [target.id],
    );
    expect(messages).toEqual([{ idempotency_key: `${sender}#0` }]);
    const steps = await h.query(
      `SELECT seq, name FROM ${partitionSchema(partitionOf(sender, PARTITIONS))}.durable_steps WHERE run_id = $1`,
      [sender],
    );
    expect(steps).toEqual([{ seq: 0, name: 'durable.send:note' }]);
    // To a run that does not exist: RunNotFoundError in the sender, nothing written.
    const lost = await engine.startRun('sender', { to: 'nobody-here' });
    await expect(lost.result({ timeoutMs: 30_000 })).rejects.toThrow(/nobody-here/);
  }, 60_000);
});
