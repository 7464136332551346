// The example shop's long waits, tested with nestjs-durable/testing in well under a second each: the
// 60-second warehouse reminder, the one-week shipment timeout (refund + stock back), and a declined
// card (fault injection) that releases the stock. The real AppModule, over HTTP, on a test database
// made from the app's own migrations.
import { createDurableTestingModule, type DurableTestingModule } from 'nestjs-durable/testing';
import request from 'supertest';
import { AppModule } from '../../src/app.module.js';
import { appConfigFromEnv } from '../../src/config/app-config.js';
import { configureHttp } from '../../src/http/http-setup.js';
import { PrismaService } from '../../src/prisma/prisma.service.js';
import { serverUrl } from '../support/global-setup.js';
import { eventually } from '../support/engine-harness.js';
import { shipmentHeaders, testEnv } from './support/example-app.js';

describe('example shop under virtual time (nestjs-durable/testing)', () => {
  let t: DurableTestingModule;
  let prisma: PrismaService;
  const api = () => request(t.http.getHttpServer());
  const order = async (body: Record<string, unknown>) =>
    (
      await api()
        .post('/orders')
        .send({ customer: 'Ada', email: 'ada@example.com', quantity: 1, ...body })
        .expect(201)
    ).body.id as string;
  const stock = (sku: string) => prisma.stock.findUniqueOrThrow({ where: { sku } });
  const emails = async (orderId: string) =>
    (await prisma.outboxEmail.findMany({ where: { orderId }, orderBy: { createdAt: 'asc' } })).map((e) => e.kind);

  beforeAll(async () => {
    t = await createDurableTestingModule(
      // The shop's real waits: a reminder after 60 s, a week before giving up, a review request 10 s after shipping.
      (db) => ({
        imports: [
          AppModule.forRoot(
            appConfigFromEnv({
              ...testEnv(db.url),
              SHIPMENT_REMINDER_MS: '60000',
              SHIPMENT_TIMEOUT_MS: String(7 * 86_400_000),
              REVIEW_REQUEST_DELAY_MS: '10000',
            }),
          ),
        ],
      }),
      { database: { url: serverUrl() }, schema: { migrations: 'prisma/migrations' }, http: { rawBody: true, configure: configureHttp } },
    );
    prisma = t.get(PrismaService);
  });
  afterAll(() => t?.close());
  afterEach(() => t.clearFaults());

  it('no shipment for 60 s: the warehouse is reminded, the run keeps waiting; shipped, the review request follows 10 s later', async () => {
    const id = await order({ sku: 'mug' });
    await t.waitFor(id, { status: 'WAITING', step: 'durable.recv:shipment' });
    await t.advanceTime('59s');
    await t.expectSteps(id, ['reserve', 'charge', 'markPaid']);
    await t.advanceTime('1s');
    await t.expectSteps(id, ['reserve', 'charge', 'markPaid', 'remindWarehouse']);
    expect((await t.run(id)).status).toBe('WAITING');
    await api()
      .post(`/orders/${id}/shipment`)
      .set(shipmentHeaders(id, { trackingNumber: 'TRACK-60' }))
      .send(JSON.stringify({ trackingNumber: 'TRACK-60' }))
      .expect(202);
    await t.settle();
    await t.expectSteps(id, ['reserve', 'charge', 'markPaid', 'remindWarehouse', 'markShipped']); // asleep for the review
    await t.advanceTime('10s');
    expect(await t.result(id)).toMatchObject({ outcome: 'SHIPPED', trackingNumber: 'TRACK-60' });
    await t.expectSteps(id, ['reserve', 'charge', 'markPaid', 'remindWarehouse', 'markShipped', 'requestReview']);
    await eventually(async () => (await emails(id)).length === 4 || null, 5_000, 'emails sent');
    expect(await emails(id)).toEqual(['order-confirmed', 'shipment-overdue', 'order-shipped', 'review-request']);
  });

  it('no shipment within a week: the order is given up, the charge refunded and the stock released', async () => {
    const before = await stock('grinder');
    const nightly = () => prisma.durableRun.count({ where: { workflowName: 'cancelUnpaidOrders', status: 'SUCCEEDED' } });
    const nightsBefore = await nightly();
    const id = await order({ sku: 'grinder', quantity: 2 });
    await t.waitFor(id, { status: 'WAITING', step: 'durable.recv:shipment' });
    await t.advanceTime('6d');
    expect((await t.run(id)).status).toBe('WAITING'); // reminded, still waiting
    await t.advanceTime('1d');
    expect(await t.result(id)).toEqual({ outcome: 'NOT_SHIPPED', reason: 'not shipped within the shipment timeout' });
    const run = await t.expectSteps(id, [
      'reserve',
      'charge',
      'markPaid',
      'remindWarehouse',
      'markNotShipped',
      'compensate:charge', // the refund, newest step first
      'compensate:reserve',
    ]);
    expect(run.steps.find((s) => s.name === 'compensate:charge')?.output).toMatchObject({ refundId: expect.stringMatching(/^re_/) });
    expect(await stock('grinder')).toEqual(before);
    expect(await prisma.order.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'NOT_SHIPPED' });
    await api()
      .post(`/orders/${id}/shipment`)
      .set(shipmentHeaders(id, { trackingNumber: 'TOO-LATE' }))
      .send(JSON.stringify({ trackingNumber: 'TOO-LATE' }))
      .expect(409);
    expect((await nightly()) - nightsBefore).toBe(7); // the nightly @DurableCron job ran once per virtual night
  });

  it('a declined card (injected): no retry, the order fails and its stock is released', async () => {
    t.failStep('charge', { nonRetryable: true, error: new Error('card declined (injected)') });
    const before = await stock('mug');
    const id = await order({ sku: 'mug', quantity: 3 });
    expect(await t.result(id)).toEqual({ outcome: 'PAYMENT_FAILED', reason: 'card declined (injected)' });
    await t.expectSteps(id, [
      'reserve',
      { name: 'charge', status: 'FAILED', attempts: 1 },
      'markPaymentFailed',
      { name: 'compensate:reserve', status: 'SUCCEEDED' },
    ]);
    expect(await stock('mug')).toEqual(before);
  });

  it('a gateway that fails twice is retried at once (back-offs skipped), the third attempt pays', async () => {
    t.failStep('charge', { attempts: [1, 2], error: new Error('503 from the gateway') });
    const id = await order({ sku: 'mug' });
    await t.waitFor(id, { status: 'WAITING' });
    await t.expectSteps(id, ['reserve', { name: 'charge', status: 'SUCCEEDED', attempts: 3 }, 'markPaid']);
  });
});
