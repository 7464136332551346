import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { WorkflowClient } from 'nestjs-durable';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { startExampleApp } from './support/example-app.js';

/**
 * The example's tenant-aware workflow: POST /customers/me/summary (the customer in x-customer, the
 * example's stand-in for auth) starts customerSummary without any customer in its input; the run
 * keeps the request's customer (module option `context`), and its step counts that customer's orders only.
 */
describe('example shop: a workflow that keeps the customer of the request that started it', () => {
  let db: TestDatabase;
  let app: INestApplication;
  beforeAll(async () => {
    db = await createTestDatabase('example_customer');
    app = await startExampleApp(db.url);
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it("counts only the requesting customer's orders, and the run shows whose it is", async () => {
    const api = () => request(app.getHttpServer());
    const ids: string[] = [];
    for (const [customer, quantity] of [
      ['Ada', 1],
      ['Ada', 2],
      ['Bob', 1],
    ] as const) {
      await api()
        .post('/orders')
        .send({ customer, email: `${customer.toLowerCase()}@example.com`, sku: 'mug', quantity })
        .expect(201);
    }
    const firstOrder = ids[0];
    await api().post('/customers/me/summary').expect(401);
    const ada = await api().post('/customers/me/summary').set('x-customer', 'Ada').expect(200);
    expect(ada.body.customer).toBe('Ada');
    expect(Object.values(ada.body.orders as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(2);
    const bob = await api().post('/customers/me/summary').set('x-customer', 'Bob').expect(200);
    expect(Object.values(bob.body.orders as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(1);

    const run = await app.get(WorkflowClient).getRun(ada.body.runId);
    expect(run?.context).toEqual({ customer: 'Ada' });
    expect(run?.input).toEqual({});
    // The orders' fulfilment runs were started outside a customer's request (POST /orders): no context.
    expect((await app.get(WorkflowClient).getRun(firstOrder))?.context).toBeUndefined();
  });
});
