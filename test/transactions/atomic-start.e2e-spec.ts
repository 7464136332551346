import type { DurableEngine } from 'nestjs-durable';
import { EngineHarness, sleep } from '../support/engine-harness.js';
import { WorkerProcess } from '../support/processes.js';

/** start()/startMany() inside the caller's Prisma transaction; idempotent starts across processes. */
describe('atomic start in the caller transaction', () => {
  let h: EngineHarness;
  let engine: DurableEngine;
  const executed: string[] = [];
  beforeAll(async () => {
    h = await EngineHarness.create('atomic');
    engine = await h.engine(
      {
        counted: async (input: { tag: string }) => {
          executed.push(input.tag);
          return input.tag;
        },
      },
      { pollIntervalMs: 200 },
    );
  });
  afterAll(() => h.close());

  it('rollback: the run never exists and never runs (checked past several poll intervals)', async () => {
    let id = '';
    await expect(
      h.prisma.$transaction(async (tx) => {
        await tx.$executeRaw`INSERT INTO test_ledger (run_id, step) VALUES ('business-write', 'order')`;
        id = (await engine.startRun('counted', { tag: 'rolled-back' }, { tx: tx as never })).id;
        throw new Error('payment refused');
      }),
    ).rejects.toThrow('payment refused');
    await sleep(1_000); // five poll intervals
    expect(await h.query(`SELECT id FROM durable_runs WHERE id = $1`, [id])).toEqual([]);
    expect(await h.query(`SELECT * FROM test_ledger WHERE run_id = 'business-write'`)).toEqual([]);
    expect(executed).not.toContain('rolled-back');
  });

  it('commit: the run starts right after commit, woken by the notify sent at commit (no poll needed)', async () => {
    // A worker that polls only once a minute: a run can only start within seconds through the wake-up.
    const notifyOnly = await h.engine(
      { notified: async (input: { i: number }) => input.i },
      { pollIntervalMs: 60_000, workerId: 'notify-only' },
    );
    const latencies: number[] = [];
    for (let i = 0; i < 20; i++) {
      const handle = await h.prisma.$transaction(async (tx) => {
        const hd = await notifyOnly.startRun('notified', { i }, { tx: tx as never });
        await sleep(5); // the caller's transaction does more work before it commits
        return hd;
      });
      const committedAt = Date.now();
      expect(await handle.result({ timeoutMs: 10_000 })).toBe(i);
      const [row] = await h.query(`SELECT extract(epoch FROM started_at) * 1000 AS started FROM durable_runs WHERE id = $1`, [handle.id]);
      latencies.push(Number(row.started) - committedAt);
    }
    latencies.sort((a, b) => a - b);
    console.log(
      `commit → start latency over 20 runs (worker polls every 60 s): p50 ${latencies[10].toFixed(1)} ms, max ${latencies[19].toFixed(1)} ms`,
    );
  });

  it('startMany: 10,000 runs in one statement inside a transaction; rollback leaves zero', async () => {
    const client = await h.engine({ counted: async () => null }, { worker: false });
    const items = Array.from({ length: 10_000 }, (_, i) => ({
      workflow: 'counted',
      input: { tag: `bulk-${i}`, pad: 'x'.repeat(50) },
      options: { id: `bulk-${i}`, runAt: new Date(Date.now() + 3600_000) },
    }));
    await expect(
      h.prisma.$transaction(
        async (tx) => {
          await client.startMany(items, { tx: tx as never });
          expect(
            (await tx.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM durable_runs WHERE id LIKE 'bulk-%'`))[0].n,
          ).toBe(10_000);
          throw new Error('rollback');
        },
        { timeout: 30_000 },
      ),
    ).rejects.toThrow('rollback');
    expect((await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE id LIKE 'bulk-%'`))[0].n).toBe(0);

    const t0 = performance.now();
    const handles = await h.prisma.$transaction(async (tx) => client.startMany(items, { tx: tx as never }), { timeout: 30_000 });
    const ms = performance.now() - t0;
    expect(handles).toHaveLength(10_000);
    expect((await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE id LIKE 'bulk-%'`))[0].n).toBe(10_000);
    console.log(`startMany: 10,000 runs in one transaction in ${ms.toFixed(0)} ms (${Math.round(10_000 / (ms / 1000))} runs/s)`);
    // Idempotent in bulk too: the same ids again insert nothing.
    await client.startMany(items.slice(0, 100));
    expect((await h.query(`SELECT count(*)::int AS n FROM durable_runs WHERE id LIKE 'bulk-%'`))[0].n).toBe(10_000);
  });

  it('two processes racing to start the same 200 ids create exactly one run each', async () => {
    const ids = Array.from({ length: 200 }, (_, i) => `race-${i}`);
    const env = { IDS: ids.join(',') };
    const [a, b] = await Promise.all([0, 1].map(() => WorkerProcess.start(h.db.url, env, 'test/support/starter-main.ts')));
    a.child.stdin!.end('go\n');
    b.child.stdin!.end('go\n');
    await Promise.all([a.waitFor('done', 30_000), b.waitFor('done', 30_000)]);
    expect(a.output).toContain('done errors=0');
    expect(b.output).toContain('done errors=0');
    await Promise.all([a.exit(), b.exit()]);
    const rows = await h.query(`SELECT id, count(*)::int AS n FROM durable_runs WHERE id LIKE 'race-%' GROUP BY id`);
    expect(rows).toHaveLength(200);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    // Each run's input comes from whichever process won: both won some (they raced) or one won all.
    const winners = await h.query(`SELECT DISTINCT input->>'from' AS pid FROM durable_runs WHERE id LIKE 'race-%'`);
    expect(winners.length).toBeGreaterThanOrEqual(1);
  });
});
