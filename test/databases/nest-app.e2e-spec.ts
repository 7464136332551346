import { Inject, Injectable, type INestApplication } from '@nestjs/common';
import { Durable, Step, Workflow, WorkflowClient } from 'nestjs-durable';
import { eventually } from '../support/engine-harness.js';
import { DATABASES, durableApp, type KindDatabase, openDatabase, PRISMA } from '../support/databases.js';

let db: KindDatabase;

@Injectable()
class Payments {
  constructor(@Inject(PRISMA) private readonly prisma: any) {}

  /** Exactly once: the ledger row and the step's checkpoint commit together. */
  @Step({ transactional: true })
  async book(orderId: string, amount: number) {
    await Durable.tx<any>().$executeRawUnsafe(
      db.sql('INSERT INTO test_ledger (run_id, step, amount) VALUES (?, ?, ?)'),
      orderId,
      'book',
      amount,
    );
    return { booked: amount };
  }

  @Workflow({ name: 'pay' })
  async pay(input: { orderId: string; amount: number }) {
    const booked = await this.book(input.orderId, input.amount);
    const receipt = await Durable.recv<string>('receipt', { timeoutMs: 30_000 });
    return { ...booked, receipt };
  }

  /** The business write and the run, in one transaction of the app's Prisma client. */
  place(orderId: string, amount: number, fail = false) {
    return this.prisma.$transaction(async (tx: any) => {
      await tx.$executeRawUnsafe(db.sql('INSERT INTO test_ledger (run_id, step, amount) VALUES (?, ?, ?)'), orderId, 'order', amount);
      const client = this.client!;
      const handle = await client.start('pay', { orderId, amount }, { tx, id: `pay-${orderId}` });
      if (fail) throw new Error('the order is refused');
      return handle.id;
    });
  }

  client: WorkflowClient | null = null;
}

/**
 * A Nest app on each database: DurableModule.forRoot with the app's Prisma client (adapter-pg or
 * adapter-mariadb) and the engine's own pool from the URL, a workflow started through WorkflowClient
 * inside the app's transaction, a transactional step, a message from outside.
 */
describe.each(DATABASES)('a Nest app on %s', (kind) => {
  let app: INestApplication;
  let payments: Payments;
  let client: WorkflowClient;

  beforeAll(async () => {
    db = await openDatabase(kind, `nest_${kind}`);
    app = await durableApp(db, [Payments], { leaseMs: 2_000, heartbeatMs: 400 });
    payments = app.get(Payments);
    client = app.get(WorkflowClient);
    payments.client = client;
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
  });

  it('starts in the app transaction: committed → the run goes on; rolled back → neither order nor run', async () => {
    const id = await payments.place('o-1', 42);
    await eventually(async () => (await client.getRun(id))?.status === 'WAITING', 10_000, 'the run to wait for its receipt');
    await client.send(id, 'receipt', 'r-1');
    expect(await client.handle(id).result({ timeoutMs: 10_000 })).toEqual({ booked: 42, receipt: 'r-1' });

    await expect(payments.place('o-2', 7, true)).rejects.toThrow('the order is refused');
    expect(await client.getRun('pay-o-2')).toBeNull();
    const rows = await db.query<{ run_id: string; step: string }>('SELECT run_id, step FROM test_ledger ORDER BY run_id, step');
    expect(rows.map((r) => `${r.run_id}:${r.step}`)).toEqual(['o-1:book', 'o-1:order']);
  });
});
