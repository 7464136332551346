import { Durable, RunNotFoundError } from 'nestjs-durable';
import { EngineHarness, eventually, sleep, STEADY } from '../support/engine-harness.js';

/** Durable.recv / WorkflowClient.send: exactly once, in order, atomic with a Prisma transaction. */
describe('waits: messages (send / recv)', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('messages', STEADY);
  });
  afterAll(() => h.close());

  const status = async (id: string) => (await h.query(`SELECT status FROM durable_runs WHERE id = $1`, [id]))[0]?.status;

  it('recv with a timeout returns the message when it arrives (promptly, also after suspending)', async () => {
    const e = await h.engine(
      { recvArrives: async () => Durable.recv<{ ok: boolean; at: Date }>('approval', { timeoutMs: 30_000 }) },
      { inMemoryWaitMaxMs: 500, suspendGraceMs: 100, workerId: 'arrives' },
    );
    const handle = await e.startRun('recvArrives', null);
    await eventually(async () => (await status(handle.id)) === 'WAITING', 5_000, 'the run to suspend');
    const at = new Date('2026-01-01T00:00:00Z');
    const sentAt = Date.now();
    await e.send(handle.id, 'approval', { ok: true, at });
    expect(await handle.result({ timeoutMs: 5_000 })).toEqual({ ok: true, at });
    expect(Date.now() - sentAt).toBeLessThan(1_000); // woken by the send, not by a poll of the 30 s timer
    const [m] = await h.query(`SELECT consumed_seq, consumed_at FROM durable_messages WHERE run_id = $1`, [handle.id]);
    expect(m.consumed_seq).toBe(0);
    expect(m.consumed_at).not.toBeNull();
  });

  it('a run waiting in memory (within suspendGraceMs) is told of a message at once (LISTEN signal)', async () => {
    const e = await h.engine(
      { recvInMemory: async () => Durable.recv<string>('ping', { timeoutMs: 60_000 }) },
      { suspendGraceMs: 10_000, workerId: 'inmemory' },
    );
    const handle = await e.startRun('recvInMemory', null);
    await eventually(async () => (await e.getRun(handle.id))?.steps.length === 1, 5_000, 'the deadline to be recorded');
    expect((await e.getRun(handle.id))?.steps[0].status).toBe('WAITING');
    const sentAt = Date.now();
    await h.engines[0].send(handle.id, 'ping', 'pong'); // through another engine: only the signal tells
    expect(await handle.result({ timeoutMs: 5_000 })).toBe('pong');
    expect(Date.now() - sentAt).toBeLessThan(1_000);
    expect((await e.getRun(handle.id))?.leaseEpoch).toBe(1); // never suspended
  });

  it('recv returns null when nothing arrives before the timeout (in memory, and suspended)', async () => {
    const e = await h.engine(
      {
        recvTimesOut: async (ms: number) => ({ got: await Durable.recv('nothing', { timeoutMs: ms }), after: await Durable.now() }),
      },
      { inMemoryWaitMaxMs: 500, suspendGraceMs: 100, workerId: 'timeout' },
    );
    for (const ms of [200, 1_200]) {
      const t0 = Date.now();
      const handle = await e.startRun('recvTimesOut', ms);
      const out = (await handle.result({ timeoutMs: 10_000 })) as { got: unknown };
      expect(out.got).toBeNull();
      expect(Date.now() - t0).toBeGreaterThanOrEqual(ms - 20);
      const run = await e.getRun(handle.id);
      expect(run?.steps[0]).toMatchObject({ name: 'durable.recv:nothing', status: 'SUCCEEDED', output: null });
      expect(run?.leaseEpoch).toBe(ms > 500 ? 2 : 1); // the long timeout suspended the run once
    }
  });

  it('a message sent before the receiver reaches recv (even before the run starts) is delivered', async () => {
    const e = await h.engine(
      {
        lateReceiver: async () => {
          await Durable.sleep(300);
          return Durable.recv('early', { timeoutMs: 5_000 });
        },
      },
      { workerId: 'early' },
    );
    const handle = await e.startRun('lateReceiver', null, { delayMs: 500 });
    expect(await status(handle.id)).toBe('PENDING');
    await e.send(handle.id, 'early', 'first');
    expect(await handle.result({ timeoutMs: 10_000 })).toBe('first');
  });

  it('send inside a Prisma transaction exists iff it commits; a rolled-back send is never delivered', async () => {
    const e = await h.engine(
      { txReceiver: async () => [await Durable.recv('t', { timeoutMs: 1_500 }), await Durable.recv('t', { timeoutMs: 1_500 })] },
      { inMemoryWaitMaxMs: 500, workerId: 'tx' },
    );
    const handle = await e.startRun('txReceiver', null);
    await h.prisma
      .$transaction(async (tx) => {
        await e.send(handle.id, 't', 'rolled back', { tx: tx as never });
        throw new Error('rollback');
      })
      .catch(() => {});
    await h.prisma.$transaction(async (tx) => {
      await e.send(handle.id, 't', 'committed', { tx: tx as never });
    });
    expect(await handle.result({ timeoutMs: 10_000 })).toEqual(['committed', null]);
    expect(await h.query(`SELECT payload FROM durable_messages WHERE run_id = $1`, [handle.id])).toEqual([{ payload: 'committed' }]);
  });

  it('delivers 1,000 messages to one run exactly once, in order; duplicate idempotency keys are dropped', async () => {
    const N = 1_000;
    const e = await h.engine(
      {
        inbox: async (n: number) => {
          const got: number[] = [];
          for (let i = 0; i < n; i++) got.push((await Durable.recv<number>('n', { timeoutMs: 60_000 }))!);
          return got;
        },
      },
      { workerId: 'inbox', inMemoryWaitMaxMs: 500, suspendGraceMs: 100 },
    );
    const handle = await e.startRun('inbox', N);
    const t0 = Date.now();
    for (let i = 0; i < N; i++) {
      await e.send(handle.id, 'n', i, { idempotencyKey: `m${i}` });
      if (i % 100 === 0) await e.send(handle.id, 'n', -1, { idempotencyKey: `m${i}` }); // duplicate: ignored
      if (i === 500) await sleep(800); // let the receiver run dry and suspend once
    }
    const got = (await handle.result({ timeoutMs: 60_000 })) as number[];
    expect(got).toEqual(Array.from({ length: N }, (_, i) => i));
    const [m] = await h.query(
      `SELECT count(*)::int AS n, count(DISTINCT consumed_seq)::int AS seqs, count(*) FILTER (WHERE consumed_at IS NULL)::int AS left
       FROM durable_messages WHERE run_id = $1`,
      [handle.id],
    );
    expect(m).toEqual({ n: N, seqs: N, left: 0 });
    const run = await e.getRun(handle.id);
    expect(run?.steps).toHaveLength(N);
    console.log(`1,000 messages to one run: ${Date.now() - t0} ms, ${run?.leaseEpoch} execution(s)`);
  });

  it('never loses a wake-up: runs that suspend at once whenever their inbox is empty get every message promptly', async () => {
    // suspendGraceMs 0 and no timeout: each empty recv suspends the run at once, racing the sends.
    // A lost wake-up would leave a run WAITING until the 10-minute safety re-check.
    const e = await h.engine(
      {
        racer: async (n: number) => {
          let sum = 0;
          for (let i = 0; i < n; i++) sum += (await Durable.recv<number>('r'))!;
          return sum;
        },
      },
      { workerId: 'racer', suspendGraceMs: 0, waitRecheckMs: 600_000, concurrency: 10 },
    );
    const runs = await Promise.all([1, 2, 3, 4, 5].map(() => e.startRun('racer', 40)));
    const senders = runs.map(async (r) => {
      for (let i = 1; i <= 40; i++) {
        await e.send(r.id, 'r', i);
        await sleep(Math.random() * 8); // often lands while the receiver is suspending
      }
    });
    await Promise.all(senders);
    for (const r of runs) expect(await r.result({ timeoutMs: 20_000 })).toBe((40 * 41) / 2);
    const [{ suspended }] = await h.query(
      `SELECT count(*)::int AS suspended FROM durable_run_events WHERE kind = 'suspended' AND run_id = ANY($1)`,
      [runs.map((r) => r.id)],
    );
    console.log(`5 runs × 40 messages with immediate suspension: ${suspended} suspensions, no wake-up lost`);
  });

  it('concurrent recvs on one topic take the messages in seq order; topics are independent', async () => {
    const e = await h.engine(
      {
        twoTopics: async () => {
          const [a1, b1, a2] = await Promise.all([Durable.recv('a'), Durable.recv('b'), Durable.recv('a')]);
          return { a1, b1, a2 };
        },
      },
      { workerId: 'topics' },
    );
    const handle = await e.startRun('twoTopics', null);
    await e.send(handle.id, 'a', 'a-first');
    await e.send(handle.id, 'b', 'b-first');
    await e.send(handle.id, 'a', 'a-second');
    expect(await handle.result({ timeoutMs: 5_000 })).toEqual({ a1: 'a-first', b1: 'b-first', a2: 'a-second' });
  });

  it('send to an unknown run is a RunNotFoundError; recv outside a workflow is a typed error', async () => {
    const e = h.engines[0];
    await expect(e.send('no-such-run', 't', 1)).rejects.toThrow(RunNotFoundError);
    await expect(Durable.recv('t')).rejects.toThrow(/inside a running workflow/);
  });
});
