import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { WorkflowClient } from 'nestjs-durable';
import request from 'supertest';
import { eventually } from '../../support/engine-harness.js';
import { AppModule } from '../../../src/app.module.js';
import { APP_CONFIG, appConfigFromEnv, type AppConfig } from '../../../src/config/app-config.js';
import { configureHttp } from '../../../src/http/http-setup.js';
import { SHIPMENT_SIGNATURE_HEADER, signShipment } from '../../../src/orders/shipment-signature.js';
import { PaymentGateway } from '../../../src/payments/payment-gateway.js';

/** The shipment webhook's secret in the tests' environment (see signShipment). */
export const TEST_SHIPMENT_SECRET = 'test-shipment-secret';

/** The headers of a shipment webhook for the order, signed as the carrier would (the body is sent as JSON.stringify(body)). */
export function shipmentHeaders(orderId: string, body: unknown, secret = TEST_SHIPMENT_SECRET): Record<string, string> {
  return { 'content-type': 'application/json', [SHIPMENT_SIGNATURE_HEADER]: signShipment(orderId, JSON.stringify(body), secret) };
}

/** Environment of the example app in tests: fast polls and leases, a quick and reliable gateway. */
export function testEnv(databaseUrl: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: databaseUrl,
    PORT: '0',
    PAYMENT_FAILURE_RATE: '0',
    PAYMENT_MIN_LATENCY_MS: '5',
    PAYMENT_MAX_LATENCY_MS: '20',
    DURABLE_LEASE_MS: '2000',
    DURABLE_HEARTBEAT_MS: '400',
    DURABLE_POLL_MS: '100',
    DURABLE_SWEEP_MS: '300',
    DURABLE_SHUTDOWN_GRACE_MS: '500',
    OUTBOX_POLL_MS: '50',
    SHIPMENT_REMINDER_MS: '2000',
    REVIEW_REQUEST_DELAY_MS: '300',
    ADMIN_TOKEN: 'test-admin-token',
    SHIPMENT_WEBHOOK_SECRET: TEST_SHIPMENT_SECRET,
    CALLBACK_SECRET: 'test-callback-secret-of-at-least-32-bytes',
    PRISMA_POOL_SIZE: '5',
    DURABLE_POOL_SIZE: '4',
    ...extra,
  };
}

/**
 * The example's real AppModule in this process (the jest worker), on the given database.
 * `gateway` replaces the payment gateway (a subclass of it, built with the app's config).
 */
export async function startExampleApp(
  databaseUrl: string,
  opts: { env?: Record<string, string>; gateway?: new (config: AppConfig) => PaymentGateway } = {},
): Promise<INestApplication> {
  const config = appConfigFromEnv(testEnv(databaseUrl, opts.env));
  let builder = Test.createTestingModule({ imports: [AppModule.forRoot(config)] });
  if (opts.gateway) {
    const Gateway = opts.gateway;
    builder = builder.overrideProvider(PaymentGateway).useFactory({ factory: (c: AppConfig) => new Gateway(c), inject: [APP_CONFIG] });
  }
  const moduleRef = await builder.compile();
  const app = moduleRef.createNestApplication({ logger: ['error', 'warn'], rawBody: true });
  configureHttp(app);
  await app.init();
  return app;
}

/** An order of one `sku` placed, paid and shipped through the app's HTTP API (its fulfilment run ended): its id and amount. */
export async function shippedOrder(app: INestApplication, sku: string): Promise<{ id: string; amount: number }> {
  const api = () => request(app.getHttpServer());
  const placed = await api().post('/orders').send({ customer: 'Ada', email: 'ada@example.com', sku, quantity: 1 }).expect(201);
  const id = placed.body.id as string;
  await eventually(async () => (await api().get(`/orders/${id}`)).body.status === 'PAID', 20_000, `order ${id} paid`);
  const body = { trackingNumber: `T-${id.slice(0, 8)}` };
  await api().post(`/orders/${id}/shipment`).set(shipmentHeaders(id, body)).send(JSON.stringify(body)).expect(202);
  await eventually(
    async () => (await app.get(WorkflowClient).getRun(id))?.status === 'SUCCEEDED',
    20_000,
    `order ${id}'s fulfilment ended`,
  );
  return { id, amount: placed.body.amount as number };
}
