import type { CanActivate } from '@nestjs/common';
import request from 'supertest';
import { createAdminApp, type AdminApp } from '../admin/support/admin-app.js';

/** Values an app's admin guard may throw that are hard to print. */
const THROWN: Array<[string, () => unknown]> = [
  ['a null-prototype object', () => Object.create(null)],
  [
    'an object whose toString throws',
    () => ({
      toString() {
        throw new Error('no');
      },
    }),
  ],
  [
    'a revoked Proxy',
    () => {
      const { proxy, revoke } = Proxy.revocable({}, {});
      revoke();
      return proxy;
    },
  ],
  ['a symbol', () => Symbol('guard')],
];

/** An admin guard that throws a value hard to print: the admin API answers 500 (logged), the app lives. */
describe('hardening: an admin guard that throws anything', () => {
  let a: AdminApp;
  let next = 0;
  const guard: CanActivate = {
    canActivate() {
      throw THROWN[next][1]();
    },
  };
  beforeAll(async () => {
    a = await createAdminApp('guard_throws', { admin: { guards: [guard] }, worker: false });
  });
  afterAll(() => a?.close());

  it.each(THROWN.map(([what], i) => [what, i] as const))('%s → 500 with a JSON body and the admin headers', async (_what, i) => {
    next = i;
    const res = await request(a.server).get('/durable/runs');
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ statusCode: 500, message: expect.stringContaining('Internal error') });
    expect(res.headers['cache-control']).toBe('no-store');
  });
});
