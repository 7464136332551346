import { Injectable, UnauthorizedException, type CanActivate, type ExecutionContext, type LoggerService } from '@nestjs/common';
import { DurableModule, InvalidOptionsError } from 'nestjs-durable';
import request from 'supertest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { bearerGuard, createAdminApp, PrismaService, type AdminApp } from './support/admin-app.js';

/** A guard class (resolved by Nest) that wants an API key header, and says 401 otherwise. */
@Injectable()
class ApiKeyGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    if (req.headers['x-admin-key'] !== 'sesame') throw new UnauthorizedException('admin key required');
    return true;
  }
}

const ENDPOINTS: Array<['get' | 'post', string]> = [
  ['get', 'runs'],
  ['get', 'runs/some-id'],
  ['get', 'runs/some-id/export'],
  ['post', 'runs/some-id/cancel'],
  ['post', 'runs/some-id/resume'],
  ['post', 'runs/some-id/fork'],
  ['get', 'stats'],
  ['get', 'workflows'],
];

class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];
  log(m: unknown) {
    this.lines.push(`log ${String(m)}`);
  }
  warn(m: unknown) {
    this.lines.push(`warn ${String(m)}`);
  }
  error(m: unknown) {
    this.lines.push(`error ${String(m)}`);
  }
  debug() {}
  verbose() {}
}

describe('admin API guards and enabling', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase('admin_guards');
  });
  afterAll(() => db.drop());

  describe('with the app guard (instance, bearer token)', () => {
    let a: AdminApp;
    beforeAll(async () => {
      a = await createAdminApp('g1', { admin: { guards: [bearerGuard('t0ken')] } }, db);
    });
    afterAll(() => a.close());

    it('answers 401 with a Bearer challenge on every endpoint without the right token, and lets it through in any case of the scheme', async () => {
      for (const [method, path] of ENDPOINTS) {
        const denied = await request(a.server)[method](`/durable/${path}`).send({ fromStep: 0 });
        expect({ path, status: denied.status, challenge: denied.headers['www-authenticate'] }).toEqual({
          path,
          status: 401,
          challenge: 'Bearer realm="durable admin"',
        });
        expect(denied.headers['cache-control']).toBe('no-store');
        const wrong = await request(a.server)[method](`/durable/${path}`).set('Authorization', 'Bearer wrong').expect(401);
        expect(wrong.headers['www-authenticate']).toMatch(/^Bearer/);
        for (const scheme of ['Bearer', 'bearer', 'BEARER']) {
          const call = request(a.server)[method](`/durable/${path}`);
          const ok = await call.set('Authorization', `${scheme} t0ken`).send(path.endsWith('fork') ? { fromStep: 0 } : {});
          expect({ path, scheme, ok: [200, 201, 404].includes(ok.status) }).toEqual({ path, scheme, ok: true });
        }
      }
    });

    it('serves the dashboard page and assets without credentials: they hold no data', async () => {
      const redirect = await request(a.server).get('/durable').expect(302);
      expect(redirect.headers.location).toBe('durable/');
      const page = await request(a.server).get('/durable/').expect(200);
      expect(page.headers['content-type']).toContain('text/html');
      expect(page.headers['content-security-policy']).toContain("script-src 'self'");
      expect(page.text).toContain('assets/dashboard.js');
      const js = await request(a.server).get('/durable/assets/dashboard.js').expect(200);
      expect(js.headers['content-type']).toContain('javascript');
      const css = await request(a.server).get('/durable/assets/dashboard.css').expect(200);
      expect(css.headers['content-type']).toContain('text/css');
      // not a dashboard file: under the admin path, so the guarded not-found answers (no credentials: 401)
      expect((await request(a.server).get('/durable/assets/../../package.json').expect(401)).text).not.toContain('nestjs-durable');
      await request(a.server).get('/durable/assets/other.js').expect(404);
      for (const name of ['index.html', 'constructor', '__proto__', 'hasOwnProperty', '..%2Fdashboard.js'])
        await request(a.server).get(`/durable/assets/${name}`).expect(404);
    });

    it('serves every ES module the entry imports, transitively, as JavaScript', async () => {
      const seen = new Set<string>();
      const queue = ['dashboard.js'];
      while (queue.length) {
        const name = queue.shift()!;
        if (seen.has(name)) continue;
        seen.add(name);
        const res = await request(a.server).get(`/durable/assets/${name}`).expect(200);
        expect(res.headers['content-type']).toContain('javascript');
        for (const m of res.text.matchAll(/^import .* from '\.\/([\w-]+\.js)';$/gm)) queue.push(m[1]);
      }
      expect(seen.size).toBeGreaterThanOrEqual(8);
    });
  });

  describe('with a guard class that throws 401, via forRootAsync, under a global prefix and a custom path', () => {
    let a: AdminApp;
    beforeAll(async () => {
      a = await createAdminApp('g2', { async: true, globalPrefix: 'api', admin: { path: '/ops/durable/', guards: [ApiKeyGuard] } }, db);
    });
    afterAll(() => a.close());

    it('answers 401 without the key and 200 with it', async () => {
      for (const [method, path] of ENDPOINTS) {
        const res = await request(a.server)[method](`/api/ops/durable/${path}`);
        expect({ path, status: res.status }).toEqual({ path, status: 401 });
        expect(res.body.message).toBe('admin key required');
      }
      const ok = await request(a.server).get('/api/ops/durable/workflows').set('x-admin-key', 'sesame').expect(200);
      expect(ok.body.workflows).toHaveLength(9);
      await request(a.server).get('/durable/runs').set('x-admin-key', 'sesame').expect(404);
      const redirect = await request(a.server).get('/api/ops/durable').expect(302);
      expect(redirect.headers.location).toBe('durable/');
      await request(a.server).get('/api/ops/durable/').expect(200);
    });
  });

  it('has no admin routes unless `admin` is set', async () => {
    const a = await createAdminApp('g3', { admin: false }, db);
    try {
      await request(a.server).get('/durable/runs').expect(404);
      await request(a.server).get('/durable/').expect(404);
    } finally {
      await a.close();
    }
  });

  it('serves the API but no page with dashboard: false', async () => {
    const a = await createAdminApp('g4', { admin: { unsafeNoGuard: true, dashboard: false } }, db);
    try {
      await request(a.server).get('/durable/stats').expect(200);
      await request(a.server).get('/durable/').expect(404);
    } finally {
      await a.close();
    }
  });

  it('refuses to boot an unguarded admin API without the explicit opt-in', () => {
    for (const admin of [{}, { guards: [] }, { unsafeNoGuard: false }, { path: '/x' }]) {
      expect(() => DurableModule.forRoot({ prisma: PrismaService, admin })).toThrow(InvalidOptionsError);
      expect(() => DurableModule.forRootAsync({ admin, useFactory: () => ({ prisma: PrismaService }) })).toThrow(/without a guard/);
    }
    expect(() => DurableModule.forRoot({ prisma: PrismaService, admin: {} })).toThrow(/guards: \[AdminGuard\]|unsafeNoGuard: true/);
  });

  it('refuses bad admin options with a clear message', () => {
    expect(() => DurableModule.forRoot({ prisma: PrismaService, admin: { path: '', unsafeNoGuard: true } })).toThrow(/admin.path/);
    expect(() => DurableModule.forRoot({ prisma: PrismaService, admin: { unsafeNoGuard: true, actor: 'jane' as never } })).toThrow(
      /admin\.actor must be a function \(request\) => string/,
    );
    expect(() => DurableModule.forRoot({ prisma: PrismaService, admin: { path: '/a/:id', unsafeNoGuard: true } })).toThrow(/admin.path/);
    expect(() => DurableModule.forRoot({ prisma: PrismaService, admin: { guards: [null as never] } })).toThrow(/admin.guards/);
    expect(() => DurableModule.forRoot({ prisma: PrismaService, admin: 'yes' as never })).toThrow(/must be an object/);
  });

  it('boots with unsafeNoGuard: true and logs a warning saying so', async () => {
    const logger = new CapturingLogger();
    const a = await createAdminApp('g5', { admin: { unsafeNoGuard: true }, logger }, db);
    try {
      const warning = logger.lines.find((l) => l.startsWith('warn') && l.includes('NOT protected'));
      expect(warning).toContain('/durable');
      await request(a.server).get('/durable/runs').expect(200);
    } finally {
      await a.close();
    }
  });

  it('logs which guards protect the API', async () => {
    const logger = new CapturingLogger();
    const a = await createAdminApp('g6', { admin: { guards: [ApiKeyGuard] }, logger }, db);
    try {
      expect(logger.lines.find((l) => l.includes('guarded by ApiKeyGuard'))).toBeTruthy();
    } finally {
      await a.close();
    }
  });
});
