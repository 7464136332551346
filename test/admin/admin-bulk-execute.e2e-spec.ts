import request from 'supertest';
import { createAdminApp, seedRuns, type AdminApp } from './support/admin-app.js';

/** Executing a bulk token over HTTP: bound to its count, single use, refused with nothing changed. */
describe('admin bulk execute: signed tokens (real Nest app, real Postgres)', () => {
  let a: AdminApp;
  const post = (path: string, body?: object) => request(a.server).post(`/durable/${path}`).send(body);
  const statuses = async (prefix: string) =>
    (await a.pool.query<{ status: string }>(`SELECT status FROM durable_runs WHERE id LIKE $1 ORDER BY id`, [`${prefix}%`])).rows.map(
      (r) => r.status,
    );

  beforeAll(async () => {
    a = await createAdminApp('admin_bulk_exec', { worker: false });
  });
  afterAll(() => a.close());

  it('says complete on the batch that reaches the matched count', async () => {
    await seedRuns(a.pool, { count: 36, prefix: 'C-' }); // 6 of each status: 18 unfinished
    const preview = (await post('runs/bulk/preview', { action: 'cancel', filter: { idPrefix: 'C-' } }).expect(200)).body;
    expect(preview.matched).toBe(18);
    const one = (await post('runs/bulk/execute', { token: preview.token, batchSize: 9 }).expect(200)).body;
    expect(one).toMatchObject({ done: 9, complete: false, token: expect.any(String) });
    const two = (await post('runs/bulk/execute', { token: one.token, batchSize: 9 }).expect(200)).body;
    expect(two).toMatchObject({ done: 18, complete: true, token: null });
  });

  it('refuses a token already executed with 409 and changes nothing more', async () => {
    await seedRuns(a.pool, { count: 12, prefix: 'R-' }); // 2 FAILED
    const failed = (await a.pool.query(`SELECT id FROM durable_runs WHERE id LIKE 'R-%' AND status = 'FAILED'`)).rows.map((r) => r.id);
    const preview = (await post('runs/bulk/preview', { action: 'retry', filter: { idPrefix: 'R-' } }).expect(200)).body;
    expect(preview.matched).toBe(2);
    const first = (await post('runs/bulk/execute', { token: preview.token }).expect(200)).body;
    expect(first).toMatchObject({ done: 2, complete: true });
    // the retried runs fail again: a replay would retry them again and report them done again
    const again = await a.pool.query(`UPDATE durable_runs SET status = 'FAILED', finished_at = now() WHERE id = ANY($1)`, [failed]);
    expect(again.rowCount).toBe(2);
    const before = await statuses('R-');
    const replay = await post('runs/bulk/execute', { token: preview.token }).expect(409);
    expect(replay.body).toMatchObject({ reason: 'reused', parameter: 'token' });
    expect(replay.body.message).toMatch(/already executed/);
    expect(await statuses('R-')).toEqual(before);
  });

  it('never changes more runs than the preview matched', async () => {
    await seedRuns(a.pool, { count: 6, prefix: 'Z-', queues: ['seed-z'] }); // one FAILED
    await a.pool.query(`UPDATE durable_runs SET status = 'SUCCEEDED', error = NULL WHERE id LIKE 'Z-%' AND status = 'FAILED'`);
    const preview = (await post('runs/bulk/preview', { action: 'delete', filter: { idPrefix: 'Z-', status: 'FAILED' } }).expect(200)).body;
    expect(preview.matched).toBe(0);
    // runs created before the preview become FAILED afterwards: not the operator's confirmed set
    await a.pool.query(`UPDATE durable_runs SET status = 'FAILED', finished_at = now() WHERE id LIKE 'Z-%'`);
    const res = (await post('runs/bulk/execute', { token: preview.token }).expect(200)).body;
    expect(res).toMatchObject({ done: 0, complete: true, token: null });
    expect(await statuses('Z-')).toEqual(Array(6).fill('FAILED'));
  });

  it('refuses an edited, unsigned or wrong-action token with 400 and a reason, changing nothing', async () => {
    await seedRuns(a.pool, { count: 6, prefix: 'E-' });
    const before = await statuses('E-');
    const preview = (await post('runs/bulk/preview', { action: 'cancel', filter: { idPrefix: 'E-none' } }).expect(200)).body;
    expect(preview.matched).toBe(0);
    const [body, sig] = preview.token.split('.');
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    const forged = `${Buffer.from(JSON.stringify({ ...payload, q: { idPrefix: 'E-' }, n: 100 })).toString('base64url')}.${sig}`;
    expect((await post('runs/bulk/execute', { token: forged }).expect(400)).body).toMatchObject({ reason: 'altered' });
    const unsigned = Buffer.from(JSON.stringify({ ...payload, v: 1, q: { idPrefix: 'E-' } })).toString('base64url');
    expect((await post('runs/bulk/execute', { token: unsigned }).expect(400)).body).toMatchObject({ reason: 'malformed' });
    const wrong = await post('runs/bulk/execute', { token: preview.token, action: 'delete' }).expect(400);
    expect(wrong.body).toMatchObject({ reason: 'wrong-action' });
    expect(await statuses('E-')).toEqual(before);
    // the refusals did not use the token up
    await post('runs/bulk/execute', { token: preview.token, action: 'cancel' }).expect(200);
  });
});
