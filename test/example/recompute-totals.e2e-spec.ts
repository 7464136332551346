import type { INestApplication } from '@nestjs/common';
import pg from 'pg';
import request from 'supertest';
import { WorkflowClient } from 'nestjs-durable';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { startExampleApp } from './support/example-app.js';

/**
 * The example's data migration: POST /maintenance/recompute-totals (admin token) starts the
 * recomputeOrderTotals backfill, which corrects every order's amount from the catalog price once;
 * a dry run counts the orders and changes none; asking twice a day returns the same backfill.
 */
describe('example shop: recomputing order totals as a backfill', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createTestDatabase('example_backfill');
    app = await startExampleApp(db.url);
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
  });
  afterAll(async () => {
    await app?.close();
    await pool?.end();
    await db?.drop();
  });

  it('corrects every wrong amount exactly once, behind the admin token', async () => {
    const api = () => request(app.getHttpServer());
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await api()
        .post('/orders')
        .send({ customer: `C${i}`, email: `c${i}@example.com`, sku: 'mug', quantity: i + 1 })
        .expect(201);
      ids.push(res.body.id);
    }
    // Two orders with a wrong amount (as a bug once wrote them).
    await pool.query(`UPDATE orders SET amount = 1 WHERE id = ANY($1)`, [ids.slice(0, 2)]);

    await api().post('/maintenance/recompute-totals').expect(401);
    const auth = { authorization: 'Bearer test-admin-token' };
    const dry = await api().post('/maintenance/recompute-totals?dryRun=true').set(auth).expect(202);
    const client = app.get(WorkflowClient);
    expect(await client.handle(dry.body.runId).result({ timeoutMs: 15_000 })).toMatchObject({ rows: 5, dryRun: true });
    expect(Number((await pool.query(`SELECT count(*) FROM orders WHERE amount = 1`)).rows[0].count)).toBe(2);

    const res = await api().post('/maintenance/recompute-totals').set(auth).expect(202);
    expect(res.body).toMatchObject({ runId: expect.stringMatching(/^recompute-totals-\d{4}-\d\d-\d\d$/), outcome: 'started' });
    expect(await client.handle(res.body.runId).result({ timeoutMs: 15_000 })).toMatchObject({ rows: 5, dryRun: false });
    const { rows } = await pool.query<{ quantity: number; amount: number }>(`SELECT quantity, amount FROM orders ORDER BY quantity`);
    expect(rows.map((r) => r.amount)).toEqual(rows.map((r) => r.quantity * 900));

    const again = await api().post('/maintenance/recompute-totals').set(auth).expect(202);
    expect(again.body).toEqual({ runId: res.body.runId, outcome: 'existing' });
    const listed = (await client.backfills()).find((b) => b.runId === res.body.runId);
    expect(listed).toMatchObject({ workflowName: 'recomputeOrderTotals', status: 'SUCCEEDED', done: 5, estimated: 5 });
  });
});
