import request from 'supertest';
import { createAdminApp, type AdminApp } from './support/admin-app.js';

/**
 * The admin API's flow control: queue limits set and reset at runtime, what each limited queue is
 * doing, its busiest concurrency keys, and why a run has not started (in the run's detail and on
 * its own route); bad input is a 400 that says what to send.
 */
describe('admin API: flow control', () => {
  let a: AdminApp;
  const get = (path: string) => request(a.server).get(`/durable/${path}`);
  const post = (path: string, body?: unknown) =>
    request(a.server)
      .post(`/durable/${path}`)
      .send(body as object);

  beforeAll(async () => {
    a = await createAdminApp('admin_flow');
    // A queue no worker serves: two runs executing (keys t1, t2), three due (t1, t1, t3), one not due yet.
    await a.pool.query(`
      INSERT INTO durable_runs (id, workflow_name, queue, status, concurrency_key, available_at, lease_owner, lease_expires_at, lease_epoch, attempt, started_at)
      VALUES ('F-run-1', 'billing.charge', 'seed-f', 'RUNNING', 't1', now(), 'seed-worker', now() + interval '1 hour', 1, 1, now()),
             ('F-run-2', 'billing.charge', 'seed-f', 'RUNNING', 't2', now(), 'seed-worker', now() + interval '1 hour', 1, 1, now())`);
    await a.pool.query(`
      INSERT INTO durable_runs (id, workflow_name, queue, status, concurrency_key, available_at)
      VALUES ('F-due-1', 'billing.charge', 'seed-f', 'PENDING', 't1', now() - interval '1 second'),
             ('F-due-2', 'billing.charge', 'seed-f', 'PENDING', 't1', now() - interval '1 second'),
             ('F-due-3', 'billing.charge', 'seed-f', 'PENDING', 't3', now() - interval '1 second'),
             ('F-later', 'billing.charge', 'seed-f', 'PENDING', 't3', now() + interval '1 hour')`);
  });
  afterAll(() => a.close());

  it('sets limits at runtime, lists them with what the queue is doing, and its busiest keys', async () => {
    const set = await post('flow/queues/seed-f/limits?force=true', { globalConcurrency: 3, keyConcurrency: 1 }).expect(200);
    expect(set.body).toMatchObject({ queue: 'seed-f', globalConcurrency: 3, keyConcurrency: 1, source: 'runtime' });
    const flow = await get('flow').expect(200);
    expect(flow.body.queues).toEqual([
      expect.objectContaining({ queue: 'seed-f', globalConcurrency: 3, keyConcurrency: 1, running: 2, due: 3, rateLimit: null }),
    ]);
    expect(flow.body).toMatchObject({ debounced: [], singletons: [] });
    // a rate limit through the API: shown with its window
    await post('flow/queues/seed-f/limits?force=true', {
      globalConcurrency: 3,
      keyConcurrency: 1,
      rateLimit: { limit: 100, periodMs: 60_000 },
    }).expect(200);
    expect((await get('flow').expect(200)).body.queues[0]).toMatchObject({
      rateLimit: { limit: 100, periodMs: 60_000 },
      rateUsed: 0,
      rateLimitedUntil: null,
    });
    const bad = await post('flow/queues/seed-f/limits?force=true', { rateLimit: { limit: 100 } }).expect(400);
    expect(JSON.stringify(bad.body)).toMatch(/rateLimit\.periodMs must be a whole number of ms/);
    await post('flow/queues/seed-f/limits?force=true', { globalConcurrency: 3, keyConcurrency: 1 }).expect(200);
    const keys = await get('flow/queues/seed-f/keys?limit=2').expect(200);
    expect(keys.body).toEqual({
      queue: 'seed-f',
      keys: [
        { key: 't1', running: 1, due: 2, rateUsed: 0, rateLimitedUntil: null },
        { key: 't2', running: 1, due: 0, rateUsed: 0, rateLimitedUntil: null },
      ],
    });
  });

  it('says why a run has not started, in its detail and on its own route', async () => {
    const blocked = await get('runs/F-due-1').expect(200);
    expect(blocked.body.concurrencyKey).toBe('t1');
    expect(blocked.body.startBlockers).toMatchObject({ reasons: ['concurrency key t1: 1/1'], claimable: false, keyRunning: 1 });
    const free = await get('runs/F-due-3/blockers').expect(200);
    expect(free.body).toMatchObject({ reasons: [], claimable: true, queueRunning: 2, globalConcurrency: 3 });
    const later = await get('runs/F-later/blockers').expect(200);
    expect(later.body.reasons[0]).toMatch(/^not due until .*Z \(in \d+ s\)$/);
    expect((await get('runs/F-run-1').expect(200)).body.startBlockers).toBeNull();
    await post('flow/queues/seed-f/limits?force=true', { globalConcurrency: 2, keyConcurrency: 1 }).expect(200);
    expect((await get('runs/F-due-3/blockers').expect(200)).body.reasons).toEqual(['queue seed-f: 2/2 running across all instances']);
    await get('runs/no-such-run/blockers').expect(404);
  });

  it('rejects bad limits and parameters with 400 saying what to send', async () => {
    const zero = await post('flow/queues/seed-f/limits?force=true', { globalConcurrency: 0 }).expect(400);
    expect(zero.body.message).toMatch(/globalConcurrency must be an integer between 1 and 1000000 .*or null for no limit/);
    const unknown = await post('flow/queues/seed-f/limits?force=true', { rate: 5 }).expect(400);
    expect(unknown.body.message).toMatch(/rate.*unknown field; the body is \{ "globalConcurrency"/);
    const text = await post('flow/queues/seed-f/limits?force=true', { keyConcurrency: 'two' }).expect(400);
    expect(text.body.message).toMatch(/keyConcurrency must be an integer/);
    await get('flow/queues/seed-f/keys?limit=0').expect(400);
    await get('flow/queues/seed-f/keys?top=3').expect(400);
    await get('flow?x=1').expect(400);
    // nothing changed by the refused requests
    expect((await get('flow').expect(200)).body.queues[0]).toMatchObject({ globalConcurrency: 2, keyConcurrency: 1 });
  });

  it('changes only the limits given: absent ones stay, null removes one', async () => {
    const limits = 'flow/queues/seed-f/limits?force=true';
    await post(limits, { globalConcurrency: 4, keyConcurrency: 2, rateLimit: { limit: 50, periodMs: 1000 } }).expect(200);
    const rate = await post(limits, { rateLimit: { limit: 10, periodMs: 1000 } }).expect(200);
    expect(rate.body).toMatchObject({ globalConcurrency: 4, keyConcurrency: 2, rateLimit: { limit: 10, periodMs: 1000 } });
    const removed = await post(limits, { keyConcurrency: null }).expect(200);
    expect(removed.body).toMatchObject({ globalConcurrency: 4, keyConcurrency: null, rateLimit: { limit: 10, periodMs: 1000 } });
    expect((await post(limits, {}).expect(400)).body.message).toMatch(/names no limit/);
    expect((await get('flow').expect(200)).body.queues[0]).toMatchObject({ globalConcurrency: 4, keyConcurrency: null });
    await post(limits, { globalConcurrency: 2, keyConcurrency: 1, rateLimit: null }).expect(200);
  });

  it('refuses limits for a queue no workflow uses (naming the known ones) unless forced, and bad queue names', async () => {
    const typo = await post('flow/queues/admin-qq/limits', { globalConcurrency: 1 }).expect(400);
    expect(typo.body).toMatchObject({ parameter: 'queue' });
    expect(typo.body.message).toMatch(
      /no workflow of this instance uses queue "admin-qq" \(known queues: admin-q, admin-slow\).*force=true/,
    );
    expect((await get('flow').expect(200)).body.queues.map((q: { queue: string }) => q.queue)).toEqual(['seed-f']);
    await post('flow/queues/admin-q/limits', { globalConcurrency: 5 }).expect(200);
    await post('flow/queues/admin-q/reset').expect(200);
    for (const name of ['bad%0D%0Aname', 'esc%1B%5B2J', 'x'.repeat(257)]) {
      const res = await post(`flow/queues/${name}/limits?force=true`, { globalConcurrency: 1 });
      expect({ name, status: res.status }).toEqual({ name, status: 400 });
    }
    await post('flow/queues/seed-f/limits?force=maybe', { globalConcurrency: 1 }).expect(400);
  });

  it('resets a runtime limit: no declared limit, so the queue has none', async () => {
    const reset = await post('flow/queues/seed-f/reset').expect(200);
    expect(reset.body).toEqual({ queue: 'seed-f', limits: null });
    expect((await get('flow').expect(200)).body.queues).toEqual([]);
    expect((await get('runs/F-due-1').expect(200)).body.startBlockers.reasons).toEqual([]);
  });
});
