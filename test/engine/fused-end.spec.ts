import { Durable } from 'nestjs-durable';
import { EngineHarness, eventually } from '../support/engine-harness.js';

/** The transaction that wrote each of the run's rows (xmin): rows written by one statement share it. */
async function writers(h: EngineHarness, runId: string) {
  const [run] = await h.query<{ status: string; xmin: string }>(`SELECT status, xmin::text FROM durable_runs WHERE id = $1`, [runId]);
  const steps = await h.query<{ seq: number; xmin: string }>(`SELECT seq, xmin::text FROM durable_steps WHERE run_id = $1 ORDER BY seq`, [
    runId,
  ]);
  const events = await h.query<{ kind: string; xmin: string }>(
    `SELECT kind, xmin::text FROM durable_run_events WHERE run_id = $1 ORDER BY id`,
    [runId],
  );
  return { run, steps, events };
}

describe('a run that ends right after its last step (the checkpoint goes with the end)', () => {
  let h: EngineHarness;
  let seenBySecond: number[] = [];
  beforeAll(async () => {
    h = await EngineHarness.create('fused_end');
    await h.engine(
      {
        one: async (n: number) => Durable.step('double', async () => n * 2),
        two: async (n: number) => {
          const a = await Durable.step('first', async () => n + 1);
          // The second step's code runs only once the first step's checkpoint is written.
          const b = await Durable.step('second', async () => {
            const rows = await h.query<{ seq: number }>(`SELECT seq FROM durable_steps WHERE run_id = $1`, [Durable.runId()]);
            seenBySecond = rows.map((r) => r.seq);
            return a * 10;
          });
          return b;
        },
        // Another worker takes the run over while the step runs (its lease moved on: epoch + 1).
        overtaken: async () =>
          Durable.step('work', async () => {
            await h.query(`UPDATE durable_runs SET lease_epoch = lease_epoch + 1 WHERE id = $1`, [Durable.runId()]);
            return 'late';
          }),
      },
      // A long lease and a slow heartbeat: the overtaken run's end itself finds the lease lost (nothing sweeps it meanwhile).
      { leaseMs: 30_000, heartbeatMs: 10_000 },
    );
  });
  afterAll(() => h.close());

  it('writes a 1-step run’s checkpoint, its end and their history in one commit', async () => {
    const handle = await h.engines[0].startRun<number>('one', 21);
    await expect(handle.result({ timeoutMs: 10_000 })).resolves.toBe(42);
    const { run, steps, events } = await writers(h, handle.id);
    expect(run.status).toBe('SUCCEEDED');
    expect(steps.map((s) => s.seq)).toEqual([0]);
    expect(steps[0].xmin).toBe(run.xmin);
    expect(events.find((e) => e.kind === 'completed')?.xmin).toBe(run.xmin);
  });

  it('writes an earlier step on its own, before the next step runs, and only the last one with the end', async () => {
    const handle = await h.engines[0].startRun<number>('two', 1);
    await expect(handle.result({ timeoutMs: 10_000 })).resolves.toBe(20);
    expect(seenBySecond).toEqual([0]);
    const { run, steps } = await writers(h, handle.id);
    expect(steps.map((s) => s.seq)).toEqual([0, 1]);
    expect(steps[0].xmin).not.toBe(run.xmin);
    expect(steps[1].xmin).toBe(run.xmin);
  });

  it('is fenced: when the lease moved on, neither the checkpoint nor the end is written', async () => {
    const handle = await h.engines[0].startRun('overtaken', null);
    await eventually(async () => {
      const rows = await h.query(`SELECT 1 FROM durable_run_events WHERE run_id = $1 AND kind = 'lease_lost'`, [handle.id]);
      return rows.length > 0 || undefined;
    });
    const { run, steps, events } = await writers(h, handle.id);
    expect(run.status).toBe('RUNNING');
    expect(steps).toEqual([]);
    expect(events.map((e) => e.kind)).not.toContain('completed');
  });
});
