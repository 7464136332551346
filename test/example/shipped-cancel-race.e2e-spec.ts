import type { INestApplication } from '@nestjs/common';
import { PivotPassedError, WorkflowClient } from 'nestjs-durable';
import request from 'supertest';
import type { AppConfig } from '../../src/config/app-config.js';
import { PaymentGateway } from '../../src/payments/payment-gateway.js';
import { PrismaService } from '../../src/prisma/prisma.service.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually, sleep } from '../support/engine-harness.js';
import { rng as seeded } from '../support/rng.js';
import { shipmentHeaders, startExampleApp } from './support/example-app.js';

/** The real gateway, recording which orders were refunded. */
class RecordingGateway extends PaymentGateway {
  readonly refunded = new Set<string>();
  constructor(config: AppConfig) {
    super(config);
  }
  override async refund(req: { idempotencyKey: string; chargeId: string; amount: number }, signal?: AbortSignal) {
    this.refunded.add(req.idempotencyKey.replace(/^refund-/, ''));
    return super.refund(req, signal);
  }
}

/**
 * A shipped order is never refunded: marking it shipped is the fulfilment saga's pivot, the
 * cancel route locks the order row before deciding, and the undo steps leave a shipped order alone.
 * The race of a shipment webhook and a cancel sent 0-600 ms after it (half of them within 25 ms), 100 times: each order ends
 * either SHIPPED (the cancel got 409; nothing refunded or released) or CANCELLED (refunded,
 * released; never shipped), and the stock adds up.
 */
describe('example shop: a shipment and a cancel racing', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let prisma: PrismaService;
  let gateway: RecordingGateway;
  const api = () => request(app.getHttpServer());

  beforeAll(async () => {
    db = await createTestDatabase('example_pivot');
    // A long review sleep: cancels that come after the shipment find the run waiting in it.
    app = await startExampleApp(db.url, { gateway: RecordingGateway, env: { REVIEW_REQUEST_DELAY_MS: '60000' } });
    prisma = app.get(PrismaService);
    gateway = app.get(PaymentGateway);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  const orderStatus = async (id: string) => (await prisma.order.findUniqueOrThrow({ where: { id } })).status;
  const paidAndWaiting = (id: string) =>
    eventually(
      async () =>
        (await orderStatus(id)) === 'PAID' && (await app.get(WorkflowClient).getRun(id))?.steps.some((s) => s.name === 'markPaid'),
      20_000,
      `order ${id} paid`,
    );

  it('100 tries at 0-600 ms: never a shipped order refunded or its stock released', async () => {
    const rng = seeded(301);
    const before = await prisma.stock.findUniqueOrThrow({ where: { sku: 'mug' } });
    const outcomes = { shipped: 0, cancelled: 0 };
    // Five orders at a time: ten at once, with their requests, transactional steps and this test's reads,
    // kept the app's ten Prisma connections so busy on a loaded CI machine that a cancel could not
    // start its transaction within Prisma's 2 s (a 500, not an outcome of the race).
    for (let batch = 0; batch < 20; batch++) {
      await Promise.all(
        Array.from({ length: 5 }, async (_, i) => {
          const placed = await api()
            .post('/orders')
            .send({ customer: 'Race', email: 'race@example.com', sku: 'mug', quantity: 1 })
            .expect(201);
          const id = placed.body.id as string;
          await paidAndWaiting(id);
          // Half the tries within the first 25 ms (where the race is), the others up to 600 ms.
          const delay = Math.floor(rng() * (i % 2 ? 600 : 25));
          const body = { trackingNumber: `T-${batch}-${i}` };
          const shipment = api().post(`/orders/${id}/shipment`).set(shipmentHeaders(id, body)).send(JSON.stringify(body));
          const shipped = shipment.then((r) => r.status);
          await sleep(delay);
          const cancel = await api().post(`/orders/${id}/cancel`).send({});
          expect([202, 409]).toContain(cancel.status);
          expect([202, 409]).toContain(await shipped);
          const end = await eventually(
            async () => {
              const s = await orderStatus(id);
              return ['SHIPPED', 'CANCELLED'].includes(s) && (s === 'SHIPPED' || gateway.refunded.has(id)) ? s : null;
            },
            20_000,
            `order ${id} settled`,
          );
          if (cancel.status === 409) expect(end).toBe('SHIPPED');
          if (end === 'SHIPPED') {
            outcomes.shipped++;
            // The engine refuses a compensating cancel past the pivot too (the admin API's cancel).
            await expect(app.get(WorkflowClient).cancel(id, { compensate: true })).rejects.toBeInstanceOf(PivotPassedError);
          } else outcomes.cancelled++;
        }),
      );
    }
    await sleep(500);
    const orders = await prisma.order.findMany({ where: { customer: 'Race' }, select: { id: true, status: true } });
    const shipped = orders.filter((o) => o.status === 'SHIPPED');
    expect(shipped.filter((o) => gateway.refunded.has(o.id))).toEqual([]);
    expect(orders.filter((o) => o.status === 'CANCELLED').every((o) => gateway.refunded.has(o.id))).toBe(true);
    const after = await prisma.stock.findUniqueOrThrow({ where: { sku: 'mug' } });
    expect(after.reserved - before.reserved).toBe(shipped.length);
    expect(after.available + after.reserved).toBe(before.available + before.reserved);
    expect(outcomes.shipped + outcomes.cancelled).toBe(100);
    process.stdout.write(`shipment/cancel race: ${JSON.stringify(outcomes)}\n`);
  }, 240_000);
});
