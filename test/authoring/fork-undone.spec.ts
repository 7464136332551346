import { Durable, NonRetryableError, Step, UndoneStepsError } from 'nestjs-durable';
import { EngineHarness, eventually } from '../support/engine-harness.js';

/**
 * A fork never reuses a checkpoint whose effect was undone: forking a compensated run (cancelled
 * with compensation, or a declined order whose stock Durable.compensate() released) from a step past
 * the first undone one is refused with UndoneStepsError naming them; from that step or earlier the
 * fork runs them again, so the ledger adds up (stock released once per reservation).
 */
describe('authoring: forks of compensated runs', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('fork_undone');
  });
  afterAll(() => h.close());

  type Tx = { $executeRawUnsafe(sql: string, ...p: unknown[]): Promise<number> };
  const ledger = async (id: string) =>
    (await h.query<{ step: string; amount: number }>(`SELECT step, amount FROM test_ledger WHERE run_id = $1 ORDER BY at`, [id])).map(
      (r) => `${r.step}:${r.amount}`,
    );
  const status = async (id: string) => (await h.query(`SELECT status FROM durable_runs WHERE id = $1`, [id]))[0]?.status;

  class Shop {
    @Step({ transactional: true, compensate: 'release' })
    async reserve(ledgerId: string) {
      await Durable.tx<Tx>().$executeRawUnsafe(`INSERT INTO test_ledger (run_id, step, amount) VALUES ($1, 'stock', 1)`, ledgerId);
    }
    @Step({ transactional: true })
    async release(ledgerId: string) {
      await Durable.tx<Tx>().$executeRawUnsafe(`INSERT INTO test_ledger (run_id, step, amount) VALUES ($1, 'stock', -1)`, ledgerId);
    }
    @Step({ compensate: 'refund' })
    async charge(ledgerId: string, decline: boolean) {
      if (decline) throw new NonRetryableError('card declined');
      return 'ch_1';
    }
    @Step()
    async refund() {}
    @Step()
    async note(what: string) {
      return what;
    }
  }

  it('cancel with compensation, then fork from step 2: refused naming the undone steps; from step 0 the fork does it all again', async () => {
    const shop = new Shop();
    const e = await h.engine({
      order: async (input: { ledger: string }) => {
        await shop.reserve(input.ledger);
        await shop.charge(input.ledger, false);
        await Durable.recv('shipment', { timeoutMs: 60_000 });
        await shop.note('shipped');
        return 'done';
      },
    });
    const run = await e.startRun('order', { ledger: 'cancelled-order' }, { id: 'cancelled-order' });
    await eventually(async () => (await status(run.id)) === 'WAITING', 15_000, 'WAITING');
    await e.cancel(run.id, { compensate: true });
    await eventually(async () => (await status(run.id)) === 'CANCELLED', 15_000, 'CANCELLED');
    const source = (await e.getRun(run.id))!;
    expect(source.steps.map((s) => s.name)).toEqual([
      'reserve',
      'charge',
      'durable.recv:shipment',
      'compensate:charge',
      'compensate:reserve',
    ]);

    for (const from of [2, 5, 1]) {
      const err = (await e.fork(run.id, from).catch((x: unknown) => x)) as UndoneStepsError;
      expect(err).toBeInstanceOf(UndoneStepsError);
      expect(err).toMatchObject({ code: 'UNDONE_STEPS', maxFromStep: 0, fromStep: from });
      expect(err.message).toMatch(/#0 reserve \(undone by #4 compensate:reserve\)/);
      if (from > 1) expect(err.message).toMatch(/#1 charge \(undone by #3 compensate:charge\)/);
    }
    expect(await h.query(`SELECT id FROM durable_runs WHERE id <> $1 AND workflow_name = 'order'`, [run.id])).toEqual([]);

    const fork = await e.fork(run.id, 0);
    expect(fork.copiedSteps).toBe(0);
    await eventually(async () => (await status(fork.id)) === 'WAITING', 15_000, 'fork WAITING');
    await e.send(fork.id, 'shipment', { trackingNumber: 'T' });
    await eventually(async () => (await status(fork.id)) === 'SUCCEEDED', 15_000, 'fork SUCCEEDED');
    expect((await e.getRun(fork.id))!.steps.map((s) => s.name)).toEqual(['reserve', 'charge', 'durable.recv:shipment', 'note']);
    expect(await ledger('cancelled-order')).toEqual(['stock:1', 'stock:-1', 'stock:1']);
  });

  it('a declined order whose stock Durable.compensate() released: fork from step 1 is refused, the stock is released once', async () => {
    const shop = new Shop();
    const e = await h.engine({
      declined: async (input: { ledger: string }) => {
        await shop.reserve(input.ledger);
        try {
          await shop.charge(input.ledger, true);
        } catch {
          await shop.note('payment failed');
          await Durable.compensate();
          return 'PAYMENT_FAILED';
        }
        return 'PAID';
      },
    });
    const run = await e.startRun('declined', { ledger: 'declined-order' }, { id: 'declined-order' });
    await eventually(async () => (await status(run.id)) === 'SUCCEEDED', 15_000, 'SUCCEEDED');
    expect(await ledger('declined-order')).toEqual(['stock:1', 'stock:-1']);
    const err = (await e.fork(run.id, 1).catch((x: unknown) => x)) as UndoneStepsError;
    expect(err).toBeInstanceOf(UndoneStepsError);
    expect(err.undone).toEqual([{ seq: 0, step: 'reserve', undoneBy: { seq: 3, step: 'compensate:reserve' } }]);
    expect(await ledger('declined-order')).toEqual(['stock:1', 'stock:-1']);

    // From step 0 the copy reserves and releases again on its own: still balanced.
    const fork = await e.fork(run.id, 0);
    await eventually(async () => (await status(fork.id)) === 'SUCCEEDED', 15_000, 'fork SUCCEEDED');
    expect(await ledger('declined-order')).toEqual(['stock:1', 'stock:-1', 'stock:1', 'stock:-1']);
  });

  it('a run not compensated forks from any step as before', async () => {
    const shop = new Shop();
    const e = await h.engine({
      plain: async (input: { ledger: string }) => {
        await shop.reserve(input.ledger);
        await shop.note('a');
        return 'ok';
      },
    });
    const run = await e.startRun('plain', { ledger: 'plain-order' }, { id: 'plain-order' });
    await eventually(async () => (await status(run.id)) === 'SUCCEEDED', 15_000, 'SUCCEEDED');
    const fork = await e.fork(run.id, 2);
    expect(fork.copiedSteps).toBe(2);
    await eventually(async () => (await status(fork.id)) === 'SUCCEEDED', 15_000, 'fork SUCCEEDED');
    expect(await ledger('plain-order')).toEqual(['stock:1']);
  });
});
