import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { startTelemetry, type ExampleTelemetry } from '../../src/telemetry/otel.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { shipmentHeaders, startExampleApp } from './support/example-app.js';

/** The example shop with its OpenTelemetry setup (as main.ts starts it): the order's trace and /metrics. */
describe('example shop: traces and metrics', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let telemetry: ExampleTelemetry;
  const api = () => request(app.getHttpServer());

  beforeAll(async () => {
    telemetry = startTelemetry('memory'); // before the app, like main.ts
    db = await createTestDatabase('example_telemetry');
    app = await startExampleApp(db.url);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
    await telemetry?.shutdown();
  });

  it('POST /orders → one trace through the request, the run and its steps; /metrics in Prometheus format', async () => {
    const res = await api().post('/orders').send({ customer: 'Ada', email: 'ada@example.com', sku: 'grinder', quantity: 1 }).expect(201);
    const id = res.body.id as string;
    await eventually(async () => (await api().get(`/orders/${id}`).expect(200)).body.status === 'PAID', 20_000, 'the order to be paid');
    await api()
      .post(`/orders/${id}/shipment`)
      .set(shipmentHeaders(id, { trackingNumber: 'TRK-1' }))
      .send(JSON.stringify({ trackingNumber: 'TRK-1' }))
      .expect(202);
    await eventually(async () => (await api().get(`/orders/${id}`).expect(200)).body.run?.status === 'SUCCEEDED', 20_000, 'the run to end');
    const detail = await api().get(`/durable/runs/${id}`).set('authorization', 'Bearer test-admin-token').expect(200);
    const traceId = detail.body.traceId as string;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);

    const tree = await eventually(async () => {
      const t = await api().get(`/traces/${traceId}`);
      return t.status === 200 && t.text.includes('durable.step requestReview') ? t.text : null;
    });
    const lines = tree!.split('\n').filter(Boolean);
    expect(lines[0]).toMatch(/^\s+\+0 ms POST \/orders {2}\d/);
    expect(lines[1]).toMatch(new RegExp(`^\\s+\\+\\d+ ms {3}durable\\.run fulfilOrder .*run ${id}, attempt 1`));
    expect(
      lines.slice(2, 5).map(
        (l) =>
          l
            .trim()
            .replace(/^\+\d+ ms\s+/, '')
            .split(' ')[1],
      ),
    ).toEqual(['reserve', 'charge', 'markPaid']);
    await api().get('/traces/0123456789abcdef0123456789abcdef').expect(404);

    const metrics = await api().get('/metrics').expect(200);
    expect(metrics.text).toContain('# TYPE durable_runs_started_total counter');
    expect(metrics.text).toMatch(/durable_runs_started_total\{durable_workflow="fulfilOrder",durable_queue="default",[^}]*\} 1/);
    expect(metrics.text).toMatch(
      /durable_step_duration_count\{durable_workflow="fulfilOrder",durable_step="charge",durable_status="SUCCEEDED"[^}]*\} 1/,
    );
    expect(metrics.text).toMatch(/durable_queue_depth\{durable_queue="default",durable_state="\w+"/);
  });
});
