import { Durable, Step } from 'nestjs-durable';
import { EngineHarness, eventually } from '../support/engine-harness.js';

/**
 * A cancelled run's waits end with it: the WAITING step rows of its receives (with a timeout) become
 * CANCELLED in the statement that cancels the run, so durable_steps, getRun() and the admin API
 * agree; a resume makes them WAITING again (the same deadlines hold).
 */
describe('authoring: a cancelled run ends its waits', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('cancel_waits');
  });
  afterAll(() => h.close());

  const stepRows = async (id: string) =>
    (
      await h.query<{ seq: number; name: string; status: string }>(
        `SELECT seq, name, status FROM durable_steps WHERE run_id = $1 ORDER BY seq`,
        [id],
      )
    ).map((r) => `${r.name}:${r.status}`);

  class Undo {
    @Step({ compensate: 'undo' })
    async work() {
      return 1;
    }
    @Step()
    async undo() {}
  }

  const waiting = async (e: { getRun(id: string): Promise<{ status: string } | null> }, id: string) =>
    eventually(
      async () => (await e.getRun(id))?.status === 'WAITING' && (await stepRows(id)).some((s) => s.endsWith(':WAITING')),
      15_000,
      'WAITING',
    );

  it('cancel: the recv rows are CANCELLED with the run (rows and getRun agree); resume makes them WAITING again', async () => {
    const e = await h.engine({
      waitsForShipment: async () => {
        await Durable.recv('shipment', { timeoutMs: 60_000 });
        return 'done';
      },
      waitsForTwo: async () => {
        await Promise.all([Durable.recv('a', { timeoutMs: 60_000 }), Durable.recv('b', { timeoutMs: 90_000 })]);
        return 'done';
      },
    });
    for (const [wf, waits] of [
      ['waitsForShipment', 1],
      ['waitsForTwo', 2],
    ] as const) {
      const run = await e.startRun(wf, null);
      await waiting(e, run.id);
      await e.cancel(run.id);
      const rows = await stepRows(run.id);
      expect(rows.filter((s) => s.endsWith(':CANCELLED'))).toHaveLength(waits);
      expect(rows.filter((s) => s.endsWith(':WAITING'))).toEqual([]);
      const view = await e.getRun(run.id);
      expect(view?.status).toBe('CANCELLED');
      expect(view?.steps.filter((s) => s.status === 'WAITING')).toEqual([]);
      await e.resume(run.id);
      await waiting(e, run.id);
      await eventually(async () => (await stepRows(run.id)).filter((s) => s.endsWith(':WAITING')).length === waits, 15_000, 'waits back');
      expect((await stepRows(run.id)).some((s) => s.endsWith(':CANCELLED'))).toBe(false);
      await e.cancel(run.id);
    }
  });

  it('cancel with compensation of a waiting run: once it ends CANCELLED its wait is CANCELLED too', async () => {
    const u = new Undo();
    const e = await h.engine({
      compensatedWait: async () => {
        await u.work();
        await Durable.recv('shipment', { timeoutMs: 60_000 });
        return 'done';
      },
    });
    const run = await e.startRun('compensatedWait', null);
    await waiting(e, run.id);
    await e.cancel(run.id, { compensate: true });
    await eventually(async () => (await e.getRun(run.id))?.status === 'CANCELLED', 15_000, 'CANCELLED');
    const rows = await stepRows(run.id);
    expect(rows).toContain('compensate:work:SUCCEEDED');
    expect(rows.filter((s) => s.endsWith(':WAITING'))).toEqual([]);
    expect((await e.getRun(run.id))?.steps.filter((s) => s.status === 'WAITING')).toEqual([]);
  });
});
