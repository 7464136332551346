import http from 'node:http';
import { HttpException, type CanActivate } from '@nestjs/common';
import { DurableModule, InvalidOptionsError } from 'nestjs-durable';
import request from 'supertest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { createAdminApp, PrismaService, type AdminApp } from './support/admin-app.js';

/** A guard that refuses as a rate limiter does (e.g. @nestjs/throttler): 429, without saying when to retry. */
const throttled: CanActivate = {
  canActivate() {
    throw new HttpException('Too many requests', 429);
  },
};

/** An open live-update stream: resolves with the status once the headers arrive; `close()` ends it. */
function openStream(url: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Promise<string>; close(): void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      const body = new Promise<string>((r) => res.on('end', () => r(text)).on('close', () => r(text)));
      resolve({ status: res.statusCode ?? 0, headers: res.headers, body, close: () => req.destroy() });
    });
    req.on('error', reject);
  });
}

/** Origin check behind proxies, the live-connection cap, Retry-After, and the options that set them. */
describe('admin API hardening', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('admin_hardening');
  });
  afterAll(() => db.drop());

  it('trusts X-Forwarded-Host for the same-origin check only with trustProxy', async () => {
    const proxied = (r: request.Test) =>
      r.set('Host', '10.0.0.5:3000').set('X-Forwarded-Host', 'shop.test').set('Origin', 'https://shop.test').send({});
    const plain = await createAdminApp('h1', { worker: false }, db);
    try {
      const refused = await proxied(request(plain.server).post('/durable/runs/none/cancel'));
      expect(refused.status).toBe(403);
      expect(refused.body.message).toMatch(/Cross-site request refused \(Origin: https:\/\/shop\.test\)/);
    } finally {
      await plain.close();
    }
    const behindProxy = await createAdminApp('h2', { worker: false, admin: { unsafeNoGuard: true, trustProxy: true } }, db);
    try {
      await proxied(request(behindProxy.server).post('/durable/runs/none/cancel')).expect(404); // past the check: no such run
      const other = request(behindProxy.server).post('/durable/runs/none/cancel').set('X-Forwarded-Host', 'shop.test');
      await other.set('Origin', 'https://evil.example').send({}).expect(403);
    } finally {
      await behindProxy.close();
    }
  });

  it('serves at most maxLiveConnections live streams, then 503 with Retry-After and the admin headers', async () => {
    const a: AdminApp = await createAdminApp('h3', { worker: false, admin: { unsafeNoGuard: true, maxLiveConnections: 2 } }, db);
    try {
      await a.app.listen(0, '127.0.0.1');
      const url = `${(await a.app.getUrl()).replace('[::1]', '127.0.0.1')}/durable/live`;
      const one = await openStream(url);
      const two = await openStream(url);
      expect([one.status, two.status]).toEqual([200, 200]);
      const full = await openStream(url);
      expect(full.status).toBe(503);
      expect(full.headers).toMatchObject({ 'retry-after': '5', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
      expect(full.headers['x-powered-by']).toBeUndefined();
      expect(JSON.parse(await full.body).message).toMatch(/already serves 2 live-update connections \(admin\.maxLiveConnections\)/);
      one.close();
      const service = a.app.get((await import('../../libs/durable/src/admin/admin-service.js')).AdminService);
      await eventually(async () => service.live.subscribers === 1, 5_000, 'one stream closed');
      const three = await openStream(url);
      expect(three.status).toBe(200);
      two.close();
      three.close();
    } finally {
      await a.close();
    }
  });

  it('sends Retry-After with every 429, also one a guard throws', async () => {
    const a = await createAdminApp('h4', { worker: false, admin: { guards: [throttled] } }, db);
    try {
      const res = await request(a.server).get('/durable/runs').expect(429);
      expect(res.headers['retry-after']).toBe('1');
      expect(res.headers['cache-control']).toBe('no-store');
    } finally {
      await a.close();
    }
  });

  it('refuses bad hardening options at boot with what to pass', () => {
    const admin = (o: object) => () => DurableModule.forRoot({ prisma: PrismaService, admin: { unsafeNoGuard: true, ...o } });
    expect(admin({ bulkTokenSecret: 'short' })).toThrow(/admin\.bulkTokenSecret must be a string of at least 32 characters/);
    expect(admin({ bulkTokenSecret: 'x'.repeat(32) })).not.toThrow();
    expect(admin({ trustProxy: 'yes' })).toThrow(/admin\.trustProxy must be true or false/);
    expect(admin({ maxLiveConnections: -1 })).toThrow(/admin\.maxLiveConnections must be an integer/);
    expect(admin({ maxLiveConnections: 1.5 })).toThrow(InvalidOptionsError);
  });
});
