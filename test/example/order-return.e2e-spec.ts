import type { INestApplication } from '@nestjs/common';
import { SwaggerModule, DocumentBuilder } from '@nestjs/swagger';
import { WorkflowClient } from 'nestjs-durable';
import request from 'supertest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { shippedOrder, startExampleApp } from './support/example-app.js';

const APPROVER = 'test-approver-token';

/**
 * The example's returns: a shipped order's refund above the approval limit waits for the signal
 * refund.approval (its endpoint behind the app's guard, body checked by the ValidationPipe); the
 * refund goes to an asynchronous provider with a callback URL, and the provider's POST there
 * resumes the run. Forged or reused URLs change nothing.
 */
describe('example shop: returns with an approval (a signal) and a refund confirmed through a callback URL', () => {
  let db: TestDatabase;
  let app: INestApplication;
  const api = () => request(app.getHttpServer());
  const client = () => app.get(WorkflowClient);

  const shipped = (sku: string) => shippedOrder(app, sku);
  /** The callback URL the fake provider got for the order's refund (the path: the app is not listening). */
  const callbackPath = async (orderId: string) => {
    const refunds = await eventually(
      async () => {
        const all = (await api().get('/fake-provider/refunds').set('authorization', 'Bearer test-admin-token').expect(200)).body as Array<{
          callbackUrl: string;
          chargeId: string;
          refundId: string;
          amount: number;
        }>;
        const run = await client().getRun(`return:${orderId}`);
        return all.find((r) => r.chargeId === (run?.input as { chargeId: string }).chargeId);
      },
      20_000,
      'the refund handed to the provider',
    );
    return { path: new URL(refunds!.callbackUrl).pathname, refundId: refunds!.refundId, url: refunds!.callbackUrl };
  };

  beforeAll(async () => {
    db = await createTestDatabase('example_returns');
    app = await startExampleApp(db.url, { env: { APPROVER_TOKEN: APPROVER, PUBLIC_URL: 'https://shop.example.com' } });
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('a small refund goes straight to the provider; its POST to the callback URL finishes the return, once', async () => {
    const order = await shipped('mug');
    await api().post(`/orders/${order.id}/return`).send({ reason: 'chipped' }).expect(202);
    const cb = await callbackPath(order.id);
    expect(cb.url.startsWith('https://shop.example.com/durable/callbacks/')).toBe(true);
    // A forged token and a body that is not a confirmation are refused, nothing delivered.
    await api().post(cb.path.replace(/.{6}$/, 'AAAAAA')).send({ refundId: cb.refundId, status: 'refunded' }).expect(404);
    const bad = await api().post(cb.path).send({ refundId: cb.refundId, status: 'maybe' }).expect(400);
    expect(bad.body.message).toContain('expected { "refundId": string');
    expect((await api().post(cb.path).send({ refundId: cb.refundId, status: 'refunded' }).expect(200)).body).toEqual({
      ok: true,
      duplicate: false,
    });
    const outcome = await client().handle(`return:${order.id}`).result({ timeoutMs: 20_000 });
    expect(outcome).toEqual({ outcome: 'REFUNDED', refundId: cb.refundId, approvedBy: 'limit' });
    expect((await api().get(`/orders/${order.id}`)).body.status).toBe('RETURNED');
    // The provider retries (it did not get our answer): the run has ended, the URL is dead.
    const again = await api().post(cb.path).send({ refundId: cb.refundId, status: 'refunded' }).expect(410);
    expect(again.body.code).toBe('CALLBACK_REFUSED');
  });

  it('a large refund waits for an approver: 401 without a token, 403 for another, 400 for a bad decision, then it goes on', async () => {
    const order = await shipped('grinder');
    expect(order.amount).toBeGreaterThan(5_000);
    const { runId } = (await api().post(`/orders/${order.id}/return`).send({ reason: 'too loud' }).expect(202)).body as { runId: string };
    await eventually(async () => (await client().getRun(runId))?.status === 'WAITING', 20_000, 'the return to wait for approval');
    const approve = (token: string | null, body: unknown) => {
      const r = api().post(`/durable/signals/refund.approval/${encodeURIComponent(runId)}`);
      return (token ? r.set('authorization', `Bearer ${token}`) : r).send(body as object);
    };
    await approve(null, { approved: true }).expect(401);
    await approve('a-clerk-token', { approved: true }).expect(403);
    const invalid = await approve(APPROVER, { approved: 'yes', extra: 1 }).expect(400);
    expect(JSON.stringify(invalid.body.message)).toMatch(/approved must be a boolean value/);
    await approve(APPROVER, { approved: true, note: 'ok by Grace' }).expect(200, { runId, signal: 'refund.approval', delivered: true });
    const cb = await callbackPath(order.id);
    await api().post(cb.path).send({ refundId: cb.refundId, status: 'refunded' }).expect(200);
    expect(await client().handle(runId).result({ timeoutMs: 20_000 })).toEqual({
      outcome: 'REFUNDED',
      refundId: cb.refundId,
      approvedBy: 'approver',
    });
    // One return per order; the run has ended: another decision is refused.
    await api().post(`/orders/${order.id}/return`).send({ reason: 'again' }).expect(409);
    expect((await api().get(`/orders/${order.id}`)).body.status).toBe('RETURNED');
    await api().get('/fake-provider/refunds').expect(401);
    await approve(APPROVER, { approved: false }).expect(409);
    await api()
      .post('/durable/signals/refund.approval/no-such-run')
      .set('authorization', `Bearer ${APPROVER}`)
      .send({ approved: true })
      .expect(404);
  });

  it('a declined refund puts the order back to SHIPPED; the admin API lists waits; the OpenAPI document has the signal', async () => {
    const order = await shipped('grinder');
    const { runId } = (await api().post(`/orders/${order.id}/return`).send({ reason: 'changed my mind' }).expect(202)).body as {
      runId: string;
    };
    await eventually(async () => (await client().getRun(runId))?.status === 'WAITING', 20_000, 'the return to wait for approval');
    const listed = await api().get('/durable/signals').set('authorization', 'Bearer test-admin-token').expect(200);
    expect(listed.body.signals.map((s: { name: string }) => s.name)).toEqual(['refund.approval', 'refund.confirmed']);
    expect(listed.body.waiting).toEqual([
      expect.objectContaining({ runId, workflowName: 'orderReturn', signal: 'refund.approval', declared: true }),
    ]);
    await client().sendSignal(runId, 'refund.approval', { approved: false, note: 'worn out' });
    expect(await client().handle(runId).result({ timeoutMs: 20_000 })).toEqual({ outcome: 'DECLINED', note: 'worn out' });
    expect((await api().get(`/orders/${order.id}`)).body.status).toBe('SHIPPED');
    const doc = SwaggerModule.createDocument(app, new DocumentBuilder().build());
    const op = doc.paths['/durable/signals/refund.approval/{runId}']?.post;
    expect(op?.requestBody).toBeDefined();
    expect(JSON.stringify(op?.requestBody)).toContain('RefundDecisionDto');
  });
});
