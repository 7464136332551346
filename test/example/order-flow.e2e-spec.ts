import { jest } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import { WorkflowClient } from 'nestjs-durable';
import request from 'supertest';
import type { AppConfig } from '../../src/config/app-config.js';
import { GatewayUnavailableError, PaymentGateway } from '../../src/payments/payment-gateway.js';
import { PrismaService } from '../../src/prisma/prisma.service.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually, sleep } from '../support/engine-harness.js';
import { shipmentHeaders, startExampleApp } from './support/example-app.js';

/** The real gateway, except that customers named flaky-* see two 503s before the charge goes through. */
class FlakyGateway extends PaymentGateway {
  readonly attempts = new Map<string, number>();
  constructor(config: AppConfig) {
    super(config);
  }
  override async charge(req: { idempotencyKey: string; amount: number; email: string }, signal?: AbortSignal) {
    const n = (this.attempts.get(req.idempotencyKey) ?? 0) + 1;
    this.attempts.set(req.idempotencyKey, n);
    if (req.email.startsWith('flaky') && n <= 2) throw new GatewayUnavailableError(`503 (attempt ${n})`);
    return super.charge(req, signal);
  }
}

type Step = { name: string; status: string; attempts: number };
const names = (steps: Step[]) => steps.map((s) => s.name);

describe('example shop over HTTP (AppModule on a real Postgres)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let prisma: PrismaService;
  let gateway: FlakyGateway;
  const api = () => request(app.getHttpServer());

  const order = (body: Record<string, unknown>) =>
    api()
      .post('/orders')
      .send({ customer: 'Ada', email: 'ada@example.com', quantity: 1, ...body });
  const view = async (id: string) => (await api().get(`/orders/${id}`).expect(200)).body;
  const until = (id: string, what: string, pred: (v: any) => boolean) =>
    eventually(
      async () => {
        const v = await view(id);
        return pred(v) ? v : null;
      },
      20_000,
      `order ${id}: ${what}`,
    );
  /** Until the run has finished and every email is sent. */
  const settled = (id: string) =>
    until(
      id,
      'run finished, emails sent',
      (v) => ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(v.run?.status) && v.emails.every((e: { sentAt: unknown }) => e.sentAt),
    );
  const ship = (id: string, trackingNumber: string) =>
    api().post(`/orders/${id}/shipment`).set(shipmentHeaders(id, { trackingNumber })).send(JSON.stringify({ trackingNumber }));
  const stock = (sku: string) => prisma.stock.findUniqueOrThrow({ where: { sku } });
  const emailKinds = (v: { emails: Array<{ kind: string }> }) => v.emails.map((e) => e.kind);

  beforeAll(async () => {
    db = await createTestDatabase('example_flow');
    // A 10-s lease: the tests count the gateway's attempts, which a second execution after a
    // loaded machine's pause past the 2-s test lease would add to; none of them waits for a lease.
    app = await startExampleApp(db.url, { gateway: FlakyGateway, env: { DURABLE_LEASE_MS: '10000', DURABLE_HEARTBEAT_MS: '1000' } });
    prisma = app.get(PrismaService);
    gateway = app.get(PaymentGateway);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('happy path: order + run in one transaction → reserve, charge, paid → waits for the shipment webhook → shipped → review email', async () => {
    const before = await stock('grinder');
    const res = await order({ sku: 'grinder', quantity: 2 }).expect(201);
    expect(res.body).toMatchObject({ sku: 'grinder', quantity: 2, amount: 2 * 12_900, status: 'NEW' });
    const id = res.body.id;

    // Paid; the run now waits in Durable.recv('shipment') (in memory here, as the test's reminder
    // timeout is short; with the default minute it suspends: WAITING, no worker slot held).
    const paid = await until(id, 'paid', (v) => v.status === 'PAID');
    expect(['RUNNING', 'WAITING']).toContain(paid.run.status);
    expect(paid.chargeId).toMatch(/^ch_/);
    expect(names(paid.run.steps).slice(0, 3)).toEqual(['reserve', 'charge', 'markPaid']);
    expect(await stock('grinder')).toMatchObject({ available: before.available - 2, reserved: before.reserved + 2 });

    await ship(id, 'TRACK-123').expect(202, { accepted: true });
    await ship(id, 'TRACK-123').expect(202); // carriers retry webhooks: harmless
    const done = await settled(id);
    expect(done).toMatchObject({ status: 'SHIPPED', trackingNumber: 'TRACK-123' });
    expect(done.run).toMatchObject({
      id,
      status: 'SUCCEEDED',
      output: { outcome: 'SHIPPED', chargeId: paid.chargeId, trackingNumber: 'TRACK-123' },
    });
    expect(done.run.steps.every((s: Step) => s.status === 'SUCCEEDED' && s.attempts === 1)).toBe(true);
    expect(names(done.run.steps).filter((n) => !n.startsWith('durable.'))).toEqual([
      'reserve',
      'charge',
      'markPaid',
      'markShipped',
      'requestReview',
    ]);
    expect(emailKinds(done)).toEqual(['order-confirmed', 'order-shipped', 'review-request']);
    await ship(id, 'OTHER-9').expect(409);
  });

  it('retries the payment step while the gateway fails; a shipment sent early waits for the run', async () => {
    const res = await order({ sku: 'mug', email: 'flaky@example.com' }).expect(201);
    await ship(res.body.id, 'EARLY-1').expect(202); // before the run even reached its recv
    const done = await settled(res.body.id);
    expect(done).toMatchObject({ status: 'SHIPPED', trackingNumber: 'EARLY-1' });
    expect(done.run.steps.find((s: Step) => s.name === 'charge')).toMatchObject({ status: 'SUCCEEDED', attempts: 3 });
    expect(gateway.attempts.get(`order-${res.body.id}`)).toBe(3);
  });

  it('no shipment in time: the warehouse is reminded once, and the run keeps waiting', async () => {
    const res = await order({ sku: 'mug' }).expect(201);
    const reminded = await until(res.body.id, 'reminder sent', (v) => emailKinds(v).includes('shipment-overdue'));
    expect(reminded).toMatchObject({ status: 'PAID' });
    await ship(res.body.id, 'LATE-7').expect(202);
    const done = await settled(res.body.id);
    expect(emailKinds(done)).toEqual(['order-confirmed', 'shipment-overdue', 'order-shipped', 'review-request']);
  });

  it('a declined card is not retried: the customer is told and the stock released (Durable.compensate())', async () => {
    const before = await stock('mug');
    const res = await order({ sku: 'mug', quantity: 3, email: 'decline@example.com' }).expect(201);
    const done = await settled(res.body.id);
    expect(done).toMatchObject({ status: 'PAYMENT_FAILED', failureReason: expect.stringContaining('declined') });
    expect(done.run).toMatchObject({ status: 'SUCCEEDED', output: { outcome: 'PAYMENT_FAILED' } }); // handled by the workflow
    expect(done.run.steps.map((s: Step) => [s.name, s.status, s.attempts])).toEqual([
      ['reserve', 'SUCCEEDED', 1],
      ['charge', 'FAILED', 1],
      ['markPaymentFailed', 'SUCCEEDED', 1],
      ['compensate:reserve', 'SUCCEEDED', 1],
    ]);
    expect(emailKinds(done)).toEqual(['payment-failed']);
    expect(await stock('mug')).toEqual(before);
    await ship(res.body.id, 'NOPE-1').expect(409);
  });

  it('cancelling a paid order refunds it, releases its stock exactly once and marks it CANCELLED; a late shipment gets 409', async () => {
    const before = await stock('grinder');
    const res = await order({ sku: 'grinder', quantity: 2 }).expect(201);
    const id = res.body.id;
    await until(id, 'paid', (v) => v.status === 'PAID');
    expect(await stock('grinder')).toMatchObject({ available: before.available - 2, reserved: before.reserved + 2 });
    expect((await api().post(`/orders/${id}/cancel`).expect(202)).body).toEqual({ id, status: 'PAID', cancelling: true });
    await api().post(`/orders/${id}/cancel`).expect(202); // asking twice is harmless
    const done = await settled(id);
    expect(done).toMatchObject({ status: 'CANCELLED', run: { status: 'CANCELLED', cancelRequestedAt: expect.any(String) } });
    const undo = done.run.steps.filter((s: Step) => s.name.startsWith('compensate:'));
    expect(undo.map((s: Step) => [s.name, s.status, s.attempts])).toEqual([
      ['compensate:charge', 'SUCCEEDED', 1], // the refund (newest step first)
      ['compensate:reserve', 'SUCCEEDED', 1], // the stock, exactly once
    ]);
    expect(await stock('grinder')).toEqual(before);
    const run = await app.get(WorkflowClient).getRun(id);
    expect(run?.steps.find((s) => s.name === 'compensate:charge')?.output).toMatchObject({ refundId: expect.stringMatching(/^re_/) });
    expect(emailKinds(done)).toEqual(['order-confirmed']);
    const late = await ship(id, 'LATE-1').expect(409);
    expect(late.body.message).toBe(`order ${id} is CANCELLED: there is nothing to ship`);
    const again = await api().post(`/orders/${id}/cancel`).expect(202);
    expect(again.body).toEqual({ id, status: 'CANCELLED', cancelling: false });
  });

  it('a shipment for an order being cancelled, or whose run has ended, gets 409; a shipped order cannot be cancelled', async () => {
    const res = await order({ sku: 'mug' }).expect(201);
    const id = res.body.id;
    await until(id, 'paid', (v) => v.status === 'PAID');
    await ship(id, 'SHIP-1').expect(202);
    const shipped = await settled(id);
    expect(shipped.status).toBe('SHIPPED');
    const ended = await ship(id, 'SHIP-1').expect(409);
    expect(ended.body.message).toBe(`order ${id}'s fulfilment has ended (SUCCEEDED): a shipment can no longer be accepted`);
    const refused = await api().post(`/orders/${id}/cancel`).expect(409);
    expect(refused.body.message).toContain('SHIPPED');
    await api().post('/orders/no-such-order/cancel').expect(404);

    // Cancelling while the run is busy: the webhook sees the cancel in progress.
    const client = app.get(WorkflowClient);
    const slow = await order({ sku: 'mug' }).expect(201);
    await until(slow.body.id, 'paid', (v) => v.status === 'PAID');
    await prisma.durableRun.update({ where: { id: slow.body.id }, data: { cancelRequestedAt: new Date() } }); // as cancel() leaves it until compensated
    const busy = await ship(slow.body.id, 'SHIP-2').expect(409);
    expect(busy.body.message).toContain('is being cancelled');
    await client.cancel(slow.body.id, { compensate: true });
    await until(slow.body.id, 'cancelled', (v) => v.status === 'CANCELLED' && v.run.status === 'CANCELLED');
  });

  it('out of stock: the order is rejected and nothing is charged', async () => {
    const res = await order({ sku: 'vintage-kettle' }).expect(201);
    const done = await settled(res.body.id);
    expect(done).toMatchObject({ status: 'REJECTED', failureReason: 'out of stock', chargeId: null });
    expect(names(done.run.steps)).toEqual(['reserve', 'markRejected']);
    expect(gateway.attempts.has(`order-${res.body.id}`)).toBe(false);
    expect(emailKinds(done)).toEqual(['out-of-stock']);
  });

  it('bad input → 400 naming every problem, unknown order → 404; nothing is written', async () => {
    const count = async () => [await prisma.order.count(), await prisma.durableRun.count()];
    const before = await count();
    const bad = await api().post('/orders').send({ customer: '', email: 'nope', sku: 'mug', quantity: 0 }).expect(400);
    expect(bad.body.message).toEqual(
      expect.arrayContaining([expect.stringMatching(/^customer/), expect.stringMatching(/^email/), expect.stringMatching(/^quantity/)]),
    );
    // NUL (Postgres text cannot hold it) and escape sequences (they would reach logs raw): 400, not a
    // 500 with a stack in the log; in the body and in an order id of the path alike.
    const logged = jest.spyOn(process.stderr, 'write');
    try {
      for (const body of [
        { customer: 'Ann\u0000', sku: 'mug' },
        { email: 'a\u0000@example.com', sku: 'mug' },
        { sku: 'm\u0000ug' },
        { email: 'a\u001b[31m@example.com', sku: 'mug' },
        { sku: 'mug\n' },
      ]) {
        const res = await order(body).expect(400);
        expect(res.body.message).toEqual([expect.stringMatching(/must not contain control characters/)]);
      }
      for (const path of ['/orders/a%00b', '/orders/a%1Bb', `/orders/${'x'.repeat(101)}`]) {
        expect((await api().get(path).expect(400)).body.message).toEqual([expect.stringContaining('without control characters')]);
      }
      await api().post('/orders/a%00b/cancel').expect(400);
      await ship('a%00b', 'X-1').expect(400);
      expect(logged.mock.calls.map((c) => String(c[0])).filter((line) => /ERROR|\n\s+at /.test(line))).toEqual([]);
    } finally {
      logged.mockRestore();
    }
    const unknown = await order({ sku: 'unicorn' }).expect(400);
    expect(unknown.body.message).toEqual([expect.stringContaining('unknown sku "unicorn"')]);
    await api().get('/orders/no-such-order').expect(404);
    await ship('no-such-order', 'X-1').expect(404);
    await ship('no-such-order', 'spaces are not allowed').expect(400);
    expect(await count()).toEqual(before);
  });

  it('an order whose transaction rolls back after start() leaves neither an order nor a run', async () => {
    const client = app.get(WorkflowClient);
    let id = '';
    await expect(
      prisma.$transaction(async (tx) => {
        const o = await tx.order.create({ data: { customer: 'Rollback', email: 'r@example.com', sku: 'mug', quantity: 1, amount: 900 } });
        id = o.id;
        await client.start('fulfilOrder', { orderId: o.id, email: o.email, sku: o.sku, quantity: 1, amount: 900 }, { tx, id: o.id });
        throw new Error('something after start() failed');
      }),
    ).rejects.toThrow('something after start() failed');
    await sleep(500); // several poll intervals: nothing may pick it up
    expect(await prisma.order.findUnique({ where: { id } })).toBeNull();
    expect(await client.getRun(id)).toBeNull();
  });

  it('the admin API and dashboard at /durable need the admin token', async () => {
    const res = await order({ sku: 'mug' }).expect(201);
    const missing = await api().get('/durable/runs').expect(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="durable admin"');
    await api().get('/durable/runs').set('authorization', 'Bearer wrong-token').expect(401);
    await api().get('/durable/runs').set('authorization', 'test-admin-token').expect(401);
    await api().get('/durable/runs?limit=1').set('authorization', 'bearer test-admin-token').expect(200); // the scheme is case-insensitive
    const runs = await api().get(`/durable/runs?idPrefix=${res.body.id}`).set('authorization', 'Bearer test-admin-token').expect(200);
    expect(runs.body.items).toEqual([expect.objectContaining({ id: res.body.id, workflowName: 'fulfilOrder' })]);
    const page = await api().get('/durable/').expect(200);
    expect(page.headers['content-type']).toContain('text/html');
    await ship(res.body.id, 'ADMIN-1').expect(202);
    await settled(res.body.id);
  });

  it('20 concurrent orders: each fulfilled once, stock and emails add up', async () => {
    const before = await stock('espresso-beans');
    const placed = await Promise.all(
      Array.from({ length: 20 }, (_, i) => order({ sku: 'espresso-beans', quantity: 1 + (i % 3) }).expect(201)),
    );
    const ids: string[] = placed.map((r) => r.body.id);
    await Promise.all(ids.map((id, i) => ship(id, `BULK-${i}`).expect(202)));
    const views = await Promise.all(ids.map((id) => settled(id)));
    expect(views.every((v) => v.status === 'SHIPPED' && v.run.status === 'SUCCEEDED')).toBe(true);
    const total = placed.reduce((n, r) => n + r.body.quantity, 0);
    expect(await stock('espresso-beans')).toMatchObject({ available: before.available - total, reserved: before.reserved + total });
    for (const kind of ['order-confirmed', 'order-shipped', 'review-request']) {
      expect(await prisma.outboxEmail.count({ where: { orderId: { in: ids }, kind } })).toBe(20);
    }
    const executions = await prisma.durableStep.groupBy({ by: ['runId', 'name'], where: { runId: { in: ids } }, _count: true });
    expect(executions.every((c) => c._count === 1 || c.name.startsWith('durable.'))).toBe(true);
  });
});
