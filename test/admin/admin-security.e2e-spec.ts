import type { CanActivate, ExecutionContext } from '@nestjs/common';
import { WorkflowClient } from 'nestjs-durable';
import request from 'supertest';
import { eventually } from '../support/engine-harness.js';
import { createAdminApp, type AdminApp } from './support/admin-app.js';

/** A guard that signs the request in as the user named by the bearer token (as Passport sets req.user). */
const userGuard: CanActivate = {
  canActivate(ctx: ExecutionContext) {
    const req = ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined>; user?: unknown }>();
    const m = /^Bearer (\w+)$/.exec(req.headers.authorization ?? '');
    if (!m) return false;
    req.user = { id: 42, email: `${m[1]}@shop.test` };
    return true;
  },
};

/**
 * The admin API against cross-site requests (a dashboard signed in with cookies must not be
 * usable by another site), its response headers, and the actor of each action in the history.
 */
describe('admin API: cross-site requests, security headers, actor in the history', () => {
  let a: AdminApp;
  let client: WorkflowClient;
  const post = (path: string) => request(a.server).post(`/durable/${path}`).set('Authorization', 'Bearer jane');
  const history = async (id: string) =>
    (await request(a.server).get(`/durable/runs/${id}`).set('Authorization', 'Bearer jane').expect(200)).body.history as Array<{
      kind: string;
      detail: Record<string, unknown> | null;
    }>;

  beforeAll(async () => {
    a = await createAdminApp('admin_security', { admin: { guards: [userGuard] } });
    client = a.app.get(WorkflowClient);
  });
  afterAll(() => a.close());

  const slowRun = async () => {
    const h = await client.start('admin.slow', { steps: 200, ms: 50 });
    await eventually(async () => (await client.getRun(h.id))?.status === 'RUNNING', 10_000, 'RUNNING');
    return h.id;
  };

  it('refuses form-encoded, text/plain and multipart bodies (415), and a foreign Origin or a cross-site fetch (403)', async () => {
    const id = await slowRun();
    const attempts: Array<[string, (r: request.Test) => request.Test, number]> = [
      ['form fork', (r) => r.set('content-type', 'application/x-www-form-urlencoded').send('fromStep=0'), 415],
      ['form cancel', (r) => r.set('content-type', 'application/x-www-form-urlencoded').send('compensate=true'), 415],
      ['text/plain', (r) => r.set('content-type', 'text/plain').send('{"compensate":true}'), 415],
      ['multipart', (r) => r.field('compensate', 'true'), 415],
      ['foreign Origin', (r) => r.set('Origin', 'https://evil.example').send({ compensate: true }), 403],
      ['cross-site fetch', (r) => r.set('Sec-Fetch-Site', 'cross-site').send({}), 403],
      ['same-site fetch', (r) => r.set('Sec-Fetch-Site', 'same-site').send({}), 403],
    ];
    for (const [what, build, status] of attempts) {
      const res = await build(post(`runs/${id}/cancel`));
      expect({ what, status: res.status }).toEqual({ what, status });
      expect(res.body.message).toMatch(status === 415 ? /Content-Type: application\/json/ : /Cross-site request refused/);
    }
    for (const action of ['resume', 'fork']) {
      const res = await post(`runs/${id}/${action}`).set('content-type', 'text/plain').send('{"fromStep":0}');
      expect(res.status).toBe(415);
    }
    // nothing happened to the run
    expect((await client.getRun(id))?.status).toBe('RUNNING');
    expect((await history(id)).map((h) => h.kind)).not.toContain('cancelled');
    // the same request from the dashboard's own origin, or from a script, is accepted
    await post(`runs/${id}/cancel`).set('Host', 'shop.test').set('Origin', 'https://shop.test').send({}).expect(200);
  });

  it('refuses the same on the bulk and schedule actions: nothing changes', async () => {
    const id = await slowRun();
    const preview = await post('runs/bulk/preview').send({ action: 'cancel', filter: { id } }).expect(200);
    const bodies: Record<string, string> = {
      'runs/bulk/preview': JSON.stringify({ action: 'cancel', filter: { id } }),
      'runs/bulk/execute': JSON.stringify({ token: preview.body.token }),
      'schedules/none/pause': '{}',
    };
    for (const [path, body] of Object.entries(bodies)) {
      const form = await post(path)
        .set('content-type', 'application/x-www-form-urlencoded')
        .send(`json=${encodeURIComponent(body)}`);
      const text = await post(path).set('content-type', 'text/plain').send(body);
      const foreign = await post(path).set('Origin', 'https://evil.example').set('content-type', 'application/json').send(body);
      const crossSite = await post(path).set('Sec-Fetch-Site', 'cross-site').set('content-type', 'application/json').send(body);
      expect({ path, statuses: [form.status, text.status, foreign.status, crossSite.status] }).toEqual({
        path,
        statuses: [415, 415, 403, 403],
      });
    }
    expect((await client.getRun(id))?.status).toBe('RUNNING');
    await client.cancel(id);
  });

  it('records who cancelled, resumed and forked a run (the request user; the client option actor)', async () => {
    const id = await slowRun();
    await post(`runs/${id}/cancel`).set('Sec-Fetch-Site', 'same-origin').send({}).expect(200);
    await post(`runs/${id}/resume`).expect(200);
    await client.cancel(id, { actor: 'support:bob' });
    const forked = await post(`runs/${id}/fork`).send({ fromStep: 0 }).expect(201);
    await client.cancel(forked.body.id);
    const h = await history(id);
    expect(h.filter((e) => ['cancelled', 'resumed'].includes(e.kind)).map((e) => [e.kind, e.detail?.actor])).toEqual([
      ['cancelled', '42'],
      ['resumed', '42'],
      ['cancelled', 'support:bob'],
    ]);
    expect((await history(forked.body.id)).find((e) => e.kind === 'forked')?.detail).toEqual({ from: id, fromStep: 0, actor: '42' });
    await expect(client.cancel(id, { actor: '' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', parameter: 'actor' });
  });

  it('records who cancelled with compensation, in the request and in the cancelled row the run ends with', async () => {
    const h = await client.start('admin.saga', { items: ['a'], total: 400, ms: 50 });
    await eventually(async () => (await client.getRun(h.id))?.steps.length === 1, 10_000, 'the undoable step');
    await post(`runs/${h.id}/cancel`).send({ compensate: true }).expect(200);
    await eventually(async () => (await client.getRun(h.id))?.status === 'CANCELLED', 15_000, 'compensated and CANCELLED');
    const rows = (await history(h.id)).filter((e) => ['cancel_requested', 'cancelled'].includes(e.kind));
    expect(rows.map((e) => [e.kind, e.detail?.actor])).toEqual([
      ['cancel_requested', '42'],
      ['cancelled', '42'],
    ]);
    expect(rows[1].detail).toMatchObject({ compensated: true });
  });

  it('records the actor of a bulk action in each run it changed (the confirming request user; the client option)', async () => {
    const ids = await Promise.all(
      [0, 1, 2].map(async (i) => (await client.start('admin.slow', { steps: 200, ms: 50 }, { tags: [`bulk-actor-${i % 2}`] })).id),
    );
    const preview = await post('runs/bulk/preview')
      .send({ action: 'cancel', filter: { tag: 'bulk-actor-0' } })
      .expect(200);
    expect(preview.body.matched).toBe(2);
    let token: string | null = preview.body.token;
    while (token) token = (await post('runs/bulk/execute').send({ token, batchSize: 1 }).expect(200)).body.token;
    await client.bulk('cancel', { tags: ['bulk-actor-1'] }, { actor: 'ops:bulk-script' });
    await client.bulk('resume', { ids: [ids[0]] }, { actor: 'ops:bulk-script' });
    const actors = async (id: string) =>
      (await history(id)).filter((e) => ['cancelled', 'resumed'].includes(e.kind)).map((e) => [e.kind, e.detail?.actor]);
    expect(await actors(ids[0])).toEqual([
      ['cancelled', '42'],
      ['resumed', 'ops:bulk-script'],
    ]);
    expect(await actors(ids[2])).toEqual([['cancelled', '42']]);
    expect(await actors(ids[1])).toEqual([['cancelled', 'ops:bulk-script']]);
    await expect(client.bulk('cancel', { ids }, { actor: ' ' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', parameter: 'actor' });
    await client.cancel(ids[0]);
  });

  it('sends no-store, nosniff and no X-Powered-By on answers, errors and refusals (the guard’s too)', async () => {
    const responses = [
      await request(a.server).get('/durable/runs').set('Authorization', 'Bearer jane').expect(200),
      await request(a.server).get('/durable/runs/none').set('Authorization', 'Bearer jane').expect(404),
      await request(a.server).get('/durable/runs').expect(403),
      await post('runs/none/cancel').set('content-type', 'text/plain').send('x').expect(415),
      // paths the admin API does not have, and the dashboard's redirect and unknown asset
      await request(a.server).get('/durable/no/such/endpoint').set('Authorization', 'Bearer jane').expect(404),
      await request(a.server).get('/durable/no-such-endpoint').expect(403),
      await post('runs/none/no-such-action').send({}).expect(404),
      await request(a.server).get('/durable').expect(302),
      await request(a.server).get('/durable/assets/no-such-file.js').expect(404),
    ];
    for (const res of responses) {
      expect({ status: res.status, cache: res.headers['cache-control'], sniff: res.headers['x-content-type-options'] }).toEqual({
        status: res.status,
        cache: 'no-store',
        sniff: 'nosniff',
      });
      expect(res.headers['x-powered-by']).toBeUndefined();
    }
    const page = await request(a.server).get('/durable/').expect(200);
    expect(page.headers['x-powered-by']).toBeUndefined();
    expect(page.headers['x-content-type-options']).toBe('nosniff');
  });
});
