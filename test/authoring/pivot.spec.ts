import { Durable, InvalidOptionsError, NonRetryableError, PivotPassedError, Step } from 'nestjs-durable';
import pg from 'pg';
import { EngineHarness, eventually, sleep } from '../support/engine-harness.js';
import { rng as seeded } from '../support/rng.js';

/**
 * A saga's pivot (`@Step({ pivot: true })`): once its checkpoint has committed, a compensating
 * cancel is refused (or only stops the run, with afterPivot: 'stop') and a failure no longer
 * compensates; a compensating cancel accepted first rolls the pivot's transaction back. The two
 * exclude each other under the run row's lock: there is no window in which both happen.
 */
describe('authoring: the pivot of a saga', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('pivot');
  });
  afterAll(() => h.close());

  type Tx = { $executeRawUnsafe(sql: string, ...p: unknown[]): Promise<number> };
  const book = (runId: string, step: string, amount = 1) =>
    Durable.tx<Tx>().$executeRawUnsafe(`INSERT INTO test_ledger (run_id, step, amount) VALUES ($1, $2, $3)`, runId, step, amount);
  const ledger = async (id: string) =>
    (await h.query<{ step: string }>(`SELECT step FROM test_ledger WHERE run_id = $1 ORDER BY at`, [id])).map((r) => r.step);
  const status = async (id: string) => (await h.query(`SELECT status FROM durable_runs WHERE id = $1`, [id]))[0]?.status;

  class Shop {
    gate: Promise<void> | null = null;
    @Step({ transactional: true, compensate: 'release' })
    async reserve(runId: string) {
      await book(runId, 'reserve');
    }
    @Step({ transactional: true })
    async release(runId: string) {
      await book(runId, 'release', -1);
    }
    @Step({ transactional: true, pivot: true })
    async ship(runId: string) {
      await book(runId, 'ship');
      if (this.gate) await this.gate;
    }
    @Step({ retries: 0 })
    async explode() {
      throw new NonRetryableError('after the pivot');
    }
  }

  it('past the pivot a compensating cancel is refused with PivotPassedError and changes nothing; afterPivot "stop" only stops the run', async () => {
    const shop = new Shop();
    const e = await h.engine({
      shipped: async (input: { id: string }) => {
        await shop.reserve(input.id);
        await shop.ship(input.id);
        await Durable.recv('review', { timeoutMs: 60_000 });
        return 'done';
      },
    });
    const run = await e.startRun('shipped', { id: 'pivot-1' }, { id: 'pivot-1' });
    await eventually(async () => (await status(run.id)) === 'WAITING', 15_000, 'WAITING');
    const err = (await e.cancel(run.id, { compensate: true }).catch((x: unknown) => x)) as PivotPassedError;
    expect(err).toBeInstanceOf(PivotPassedError);
    expect(err).toMatchObject({ code: 'PIVOT_PASSED', runId: 'pivot-1', pivotRunId: 'pivot-1', step: 'ship', seq: 1 });
    expect(err.message).toMatch(/afterPivot: 'stop'/);
    expect(await status(run.id)).toBe('WAITING');
    expect((await e.getRun(run.id))?.cancelRequestedAt).toBeNull();
    expect((await e.getRun(run.id))?.steps.find((s) => s.name === 'ship')).toMatchObject({ pivot: true, compensation: null });
    await expect(e.cancel(run.id, { compensate: true, afterPivot: 'bogus' as never })).rejects.toThrow(/afterPivot/);
    await e.cancel(run.id, { compensate: true, afterPivot: 'stop' });
    expect(await status(run.id)).toBe('CANCELLED');
    await sleep(300);
    expect(await ledger(run.id)).toEqual(['reserve', 'ship']);
    const last = (await e.getRunEvents(run.id)).at(-1);
    expect(last).toMatchObject({ kind: 'cancelled', detail: { afterPivot: 'stop', pivot: { seq: 1, step: 'ship' } } });
  });

  it('a compensating cancel accepted while the pivot runs wins: the pivot rolls back and the run compensates', async () => {
    const shop = new Shop();
    let open!: () => void;
    shop.gate = new Promise<void>((r) => (open = r));
    const e = await h.engine({
      racing: async (input: { id: string }) => {
        await shop.reserve(input.id);
        await shop.ship(input.id);
        return 'shipped';
      },
    });
    const run = await e.startRun('racing', { id: 'pivot-2' }, { id: 'pivot-2' });
    await eventually(async () => (await h.query(`SELECT 1 FROM durable_steps WHERE run_id = 'pivot-2' AND name = 'reserve'`)).length > 0);
    await sleep(100); // ship is inside its transaction, waiting at the gate
    await e.cancel(run.id, { compensate: true });
    open();
    await eventually(async () => (await status(run.id)) === 'CANCELLED', 15_000, 'CANCELLED');
    expect(await ledger(run.id)).toEqual(['reserve', 'release']);
    expect((await e.getRun(run.id))?.steps.map((s) => s.name)).toEqual(['reserve', 'compensate:reserve']);
  });

  it('a failure after the pivot ends the run FAILED without compensating', async () => {
    const shop = new Shop();
    const e = await h.engine({
      failsLate: async (input: { id: string }) => {
        await shop.reserve(input.id);
        await shop.ship(input.id);
        await shop.explode();
      },
    });
    const run = await e.startRun('failsLate', { id: 'pivot-3' }, { id: 'pivot-3' });
    await eventually(async () => (await status(run.id)) === 'FAILED', 15_000, 'FAILED');
    expect(await ledger(run.id)).toEqual(['reserve', 'ship']);
  });

  it('pivot: true needs a transactional step', async () => {
    expect(() => {
      class Bad {
        @Step({ pivot: true })
        async ship() {}
      }
      return Bad;
    }).toThrow(InvalidOptionsError);
    await expect(Durable.step('x', async () => 1, { pivot: 'yes' as never })).rejects.toThrow(/pivot must be true or false/);
  });

  it('a pivot checkpoint committing while a compensating cancel waits for the run row: the cancel sees it and is refused', async () => {
    const shop = new Shop();
    const e = await h.engine({
      held: async (input: { id: string }) => {
        await shop.reserve(input.id);
        await Durable.recv('review', { timeoutMs: 60_000 });
        return 'done';
      },
    });
    const run = await e.startRun('held', { id: 'pivot-4' }, { id: 'pivot-4' });
    await eventually(async () => (await status(run.id)) === 'WAITING', 15_000, 'WAITING');
    // What a pivot's checkpoint does (store/pivot.ts): the run row FOR SHARE, the step row, then commit.
    const tx = new pg.Client({ connectionString: h.db.url });
    await tx.connect();
    try {
      await tx.query('BEGIN');
      await tx.query(`SELECT 1 FROM durable_runs WHERE id = $1 FOR SHARE`, [run.id]);
      await tx.query(
        `INSERT INTO durable_steps (run_id, seq, name, status, output, compensation) VALUES ($1, 50, 'ship', 'SUCCEEDED', 'null', '{"pivot":true}')`,
        [run.id],
      );
      const cancel = e.cancel(run.id, { compensate: true }).then(
        () => null,
        (err: unknown) => err,
      );
      await sleep(300); // the cancel now waits for the row
      await tx.query('COMMIT');
      const err = (await cancel) as PivotPassedError;
      expect(err).toBeInstanceOf(PivotPassedError);
      expect(err).toMatchObject({ step: 'ship', seq: 50 });
      expect((await e.getRun(run.id))?.cancelRequestedAt).toBeNull();
    } finally {
      await tx.end();
    }
    await e.cancel(run.id);
  });

  it('the race: a message lets the pivot run, a compensating cancel comes 0-40 ms later; 100 tries, never both shipped and undone', async () => {
    const shop = new Shop();
    const e = await h.engine(
      {
        race: async (input: { id: string }) => {
          await shop.reserve(input.id);
          await Durable.recv('ship');
          await shop.ship(input.id);
          await Durable.recv('review', { timeoutMs: 60_000 });
          return 'done';
        },
      },
      { concurrency: 20 },
    );
    const rng = seeded(30);
    const outcomes = { refused: 0, cancelled: 0 };
    for (let batch = 0; batch < 10; batch++) {
      await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          const id = `race-${batch}-${i}`;
          await e.startRun('race', { id }, { id });
          await eventually(async () => (await ledger(id)).includes('reserve') && (await status(id)) === 'WAITING', 15_000, id);
          const wait = Math.floor(rng() * 40);
          await e.send(id, 'ship', null);
          await sleep(wait);
          const err = await e.cancel(id, { compensate: true }).catch((x: unknown) => x);
          if (err) {
            expect(err).toBeInstanceOf(PivotPassedError);
            outcomes.refused++;
          } else outcomes.cancelled++;
          await eventually(async () => ['WAITING', 'CANCELLED'].includes(await status(id)) && (await ledger(id)).length >= 2, 15_000, id);
          await sleep(50);
          const l = await ledger(id);
          if (err) expect(l).toEqual(['reserve', 'ship']);
          else {
            await eventually(async () => (await status(id)) === 'CANCELLED', 15_000, `${id} CANCELLED`);
            expect(await ledger(id)).toEqual(['reserve', 'release']);
          }
        }),
      );
    }
    expect(outcomes.refused + outcomes.cancelled).toBe(100);
    process.stdout.write(`pivot race: ${JSON.stringify(outcomes)}\n`);
  }, 120_000);
});
