import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { SHIPMENT_SIGNATURE_HEADER, signShipment } from '../../src/orders/shipment-signature.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { shipmentHeaders, startExampleApp, TEST_SHIPMENT_SECRET } from './support/example-app.js';

/** The example's own routes: JSON bodies only, its security headers, a signed shipment webhook, real report days. */
describe('example shop: HTTP hardening', () => {
  let db: TestDatabase;
  let app: INestApplication;
  const api = () => request(app.getHttpServer());
  beforeAll(async () => {
    db = await createTestDatabase('example_http');
    app = await startExampleApp(db.url);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('refuses bodies that are not JSON with 415, before any route runs', async () => {
    await api().post('/orders').type('form').send('customer=Ada&email=ada@example.com&sku=mug&quantity=1').expect(415);
    await api().post('/orders').set('content-type', 'text/plain').send('{"customer":"Ada"}').expect(415);
    await api().post('/reports').type('form').send('day=2026-01-01').expect(415);
    await api().post('/orders').send({ customer: 'Ada', email: 'ada@example.com', sku: 'mug', quantity: 1 }).expect(201);
  });

  it('answers with nosniff, no framing and no X-Powered-By on its own routes', async () => {
    for (const res of [await api().get('/stock').expect(200), await api().get('/orders/nope').expect(404)]) {
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['x-powered-by']).toBeUndefined();
    }
  });

  it('takes a shipment only with the signature of that order and body (401 otherwise)', async () => {
    const placed = await api().post('/orders').send({ customer: 'Ada', email: 'ada@example.com', sku: 'mug', quantity: 1 }).expect(201);
    const id: string = placed.body.id;
    const other = await api().post('/orders').send({ customer: 'Bo', email: 'bo@example.com', sku: 'mug', quantity: 1 }).expect(201);
    const body = { trackingNumber: 'SIGNED-1' };
    const post = (headers: Record<string, string>, sent: unknown = body) =>
      api().post(`/orders/${id}/shipment`).set(headers).send(JSON.stringify(sent));
    const json = { 'content-type': 'application/json' };
    expect((await post(json).expect(401)).body.message).toMatch(/x-shipment-signature/);
    await post({ ...json, [SHIPMENT_SIGNATURE_HEADER]: signShipment(id, JSON.stringify(body), 'wrong-secret') }).expect(401);
    await post(shipmentHeaders(other.body.id, body)).expect(401); // signed for another order
    await post(shipmentHeaders(id, body), { trackingNumber: 'SIGNED-2' }).expect(401); // body changed after signing
    await eventually(async () => (await api().get(`/orders/${id}`)).body.status === 'PAID', 20_000, 'the order to be paid');
    expect((await post(shipmentHeaders(id, body)).expect(202)).body).toEqual({ accepted: true });
    const upper = signShipment(id, JSON.stringify(body), TEST_SHIPMENT_SECRET).toUpperCase().replace('SHA256=', 'sha256=');
    await post({ ...json, [SHIPMENT_SIGNATURE_HEADER]: upper }).expect(202); // hex in either case; the same shipment again is idempotent
  });

  it('refuses report days that are not calendar days (no roll-over) and years Postgres cannot take', async () => {
    for (const day of ['2026-02-30', '2026-13-01', '0000-01-01', '1969-12-31', '2026-2-3', 20260101]) {
      const res = await api().post('/reports').send({ day }).expect(400);
      expect(res.body.message).toEqual(['day must be a calendar day written YYYY-MM-DD, from 1970-01-01 to 9999-12-31']);
    }
    expect((await api().post('/reports').send({ day: '2024-02-29' }).expect(202)).body).toEqual({
      runId: 'sales-report:2024-02-29',
      day: '2024-02-29',
    });
  });
});
