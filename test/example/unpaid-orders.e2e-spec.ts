import type { INestApplication } from '@nestjs/common';
import { WorkflowClient } from 'nestjs-durable';
import request from 'supertest';
import { PrismaService } from '../../src/prisma/prisma.service.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { startExampleApp } from './support/example-app.js';

/**
 * The example's nightly job, migrated from @nestjs/schedule with @DurableCron: declared at boot
 * (midnight, Paris time), and when it runs it cancels unpaid orders, their runs, and their reservation.
 */
describe('example shop: the nightly "cancel unpaid orders" schedule', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let client: WorkflowClient;
  let prisma: PrismaService;

  beforeAll(async () => {
    db = await createTestDatabase('example_unpaid');
    // A gateway that takes a minute: orders stay RESERVED (unpaid); every order counts as old enough.
    app = await startExampleApp(db.url, {
      env: { UNPAID_ORDER_TTL_MS: '0', PAYMENT_MIN_LATENCY_MS: '60000', PAYMENT_MAX_LATENCY_MS: '60000' },
    });
    client = app.get(WorkflowClient);
    prisma = app.get(PrismaService);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('is declared at boot: one schedule, midnight in Paris', async () => {
    const s = (await client.schedules.get('cancelUnpaidOrders'))!;
    expect(s).toMatchObject({
      source: 'declared',
      cron: '0 0 * * *',
      timeZone: 'Europe/Paris',
      catchUp: 'latest',
      overlap: 'skip',
      paused: false,
    });
    const local = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Paris',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    }).format(s.nextFireAt);
    expect(local).toBe('00:00');
  });

  it('a run cancels the unpaid order, its fulfilment run and its reservation', async () => {
    const before = await prisma.stock.findUniqueOrThrow({ where: { sku: 'grinder' } });
    const placed = await request(app.getHttpServer())
      .post('/orders')
      .send({ customer: 'Ada', email: 'ada@example.com', sku: 'grinder', quantity: 1 })
      .expect(201);
    const id = placed.body.id as string;
    await eventually(
      async () => (await prisma.order.findUniqueOrThrow({ where: { id } })).status === 'RESERVED',
      10_000,
      'the reservation',
    );
    const t = await client.schedules.trigger('cancelUnpaidOrders');
    expect(t.outcome).toBe('started');
    expect(await client.handle(t.runId).result({ timeoutMs: 15_000 })).toEqual({ cancelled: [id] });
    expect(await prisma.order.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: 'CANCELLED' });
    expect((await client.getRun(id))!.status).toBe('CANCELLED');
    expect(await prisma.stock.findUniqueOrThrow({ where: { sku: 'grinder' } })).toMatchObject({
      available: before.available,
      reserved: before.reserved,
    });
  });
});
