import request from 'supertest';
import { bearerGuard, createAdminApp, type AdminApp } from './support/admin-app.js';

/**
 * Every answer under the admin path comes from the admin module, malformed URLs included: a path
 * that is not valid percent-encoding gets the admin's 400 with its headers, not the framework's.
 */
describe('admin API: malformed paths', () => {
  let a: AdminApp;
  beforeAll(async () => {
    a = await createAdminApp('admin_decode', { worker: false, admin: { guards: [bearerGuard('t0ken')] } });
  });
  afterAll(() => a.close());

  const expectAdminAnswer = (res: request.Response) => {
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['x-powered-by']).toBeUndefined();
  };

  it('answers a path that cannot be decoded with the admin 400 and headers, with or without credentials', async () => {
    for (const path of [
      '/durable/runs/%FF',
      '/durable/%FF',
      '/durable/assets/%FF',
      '/durable/schedules/%E0%A4%A',
      '/durable/runs/a%ZZ/cancel',
    ]) {
      for (const auth of [undefined, 'Bearer t0ken']) {
        const req = request(a.server).get(path);
        const res = await (auth ? req.set('Authorization', auth) : req);
        expect({ path, auth, status: res.status }).toEqual({ path, auth, status: 400 });
        expectAdminAnswer(res);
        expect(res.headers['content-type']).toMatch(/^application\/json/);
        expect(res.body).toMatchObject({ statusCode: 400, error: 'Bad Request' });
        expect(res.body.message).toMatch(/percent-encod/);
      }
    }
    const post = await request(a.server).post('/durable/runs/%FF/cancel').set('Authorization', 'Bearer t0ken').send({});
    expect(post.status).toBe(400);
    expectAdminAnswer(post);
  });

  it('does the same under a global prefix and a custom path', async () => {
    const b = await createAdminApp(
      'admin_decode2',
      { worker: false, globalPrefix: 'api', admin: { unsafeNoGuard: true, path: 'ops/durable' } },
      a.db,
    );
    try {
      const res = await request(b.server).get('/api/ops/durable/runs/%FF').expect(400);
      expectAdminAnswer(res);
      expect(res.body.message).toMatch(/percent-encod/);
      await request(b.server).get('/api/ops/durable/runs/a%20b').expect(404);
      expect((await request(b.server).get('/api/other/%FF')).headers['cache-control']).not.toBe('no-store');
    } finally {
      await b.close();
    }
  });

  it('still serves well-formed encoded paths, and leaves the rest of the app alone', async () => {
    const res = await request(a.server).get('/durable/runs/a%20b').set('Authorization', 'Bearer t0ken').expect(404);
    expect(res.body.code).toBe('RUN_NOT_FOUND');
    expectAdminAnswer(res);
    const outside = await request(a.server).get('/elsewhere/%FF');
    expect(outside.headers['cache-control']).not.toBe('no-store');
  });

  it('sends no-store on the dashboard page and assets, as on every admin answer', async () => {
    for (const path of ['/durable/', '/durable/assets/dashboard.js', '/durable/assets/dashboard.css', '/durable']) {
      const res = await request(a.server).get(path);
      expect({ path, cache: res.headers['cache-control'] }).toEqual({ path, cache: 'no-store' });
      expectAdminAnswer(res);
    }
    expect((await request(a.server).get('/durable/').expect(200)).headers['content-security-policy']).toContain("script-src 'self'");
  });
});
