import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WorkflowClient } from 'nestjs-durable';
import { createAdminApp, seedRuns, type AdminApp } from './support/admin-app.js';
import { probes, type Probe } from './support/fuzz-probes.js';

/**
 * Fuzz: many generated bad (and some good) inputs against every admin endpoint — wrong types,
 * out-of-range numbers, broken encodings, huge values, unknown ids, SQL-looking strings,
 * forged cursors, odd bodies and content types. The API must answer every one of them with
 * something other than a 5xx, and the data must be untouched.
 */

const SEED = Number(process.env.FUZZ_SEED ?? 20261129);

function send(port: number, prefix: string, p: Probe): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: p.method,
        path: `${prefix}/${p.path}`,
        headers: { ...(p.headers ?? {}), ...(p.body !== undefined ? { 'content-length': Buffer.byteLength(p.body) } : {}) },
      },
      (res) => {
        if (p.stream && (res.headers['content-type'] ?? '').includes('text/event-stream')) {
          resolve({ status: res.statusCode ?? 0, body: '' });
          req.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    if (p.body !== undefined) req.write(p.body);
    req.end();
  });
}

async function fuzz(a: AdminApp, label: string, stride: number) {
  await a.app.listen(0, '127.0.0.1');
  const port = (a.app.getHttpServer().address() as AddressInfo).port;
  // Runs no probe names (Q-…): their rows and steps must come out unchanged.
  const fingerprint = `SELECT md5(string_agg(r.id || r.status || r.updated_at::text || coalesce(r.output::text, '') ||
      (SELECT count(*) FROM durable_steps s WHERE s.run_id = r.id), ',' ORDER BY r.id)) AS h FROM durable_runs r WHERE r.id LIKE 'Q-%'`;
  const before = await a.pool.query(fingerprint);
  const list = probes(SEED).filter((_, i) => i % stride === 0);
  const histogram: Record<number, number> = {};
  const fiveXX: string[] = [];
  for (const p of list) {
    const res = await send(port, '/durable', p);
    histogram[res.status] = (histogram[res.status] ?? 0) + 1;
    if (res.status >= 500 || res.status === 0)
      fiveXX.push(`${p.method} /durable/${p.path.slice(0, 120)} → ${res.status} ${res.body.slice(0, 200)}`);
  }
  const after = await a.pool.query(fingerprint);
  console.log(`admin fuzz (${label}, seed ${SEED}): ${list.length} requests, statuses ${JSON.stringify(histogram)}, 5xx: ${fiveXX.length}`);
  return { fiveXX, sent: list.length, histogram, intact: before.rows[0].h === after.rows[0].h };
}

// Every probe through the engine's own pool; every third through Prisma alone (the same checks
// answer before either touches the database, so a third of the list covers the second path).
describe.each([
  ['own pg pool', {}, 1],
  ['Prisma only', { connection: false as const }, 3],
])('admin API fuzz (%s)', (label, options, stride) => {
  let a: AdminApp;
  beforeAll(async () => {
    a = await createAdminApp(`admin_fuzz_${label === 'own pg pool' ? 'pg' : 'prisma'}`, options);
    await seedRuns(a.pool, { count: 60, prefix: 'L-', steps: 3 });
    await seedRuns(a.pool, { count: 60, prefix: 'Q-', steps: 3 });
    // a schedule that fires once a year, and one whose stored expression no instance can read
    await a.pool.query(
      `INSERT INTO durable_schedules (id, workflow_name, cron, next_fire_at) VALUES ('S-1', 'admin.sum', '0 0 1 1 *', now() + interval '300 days'),
         ('S-bad', 'admin.sum', 'not a cron', now() + interval '300 days')`,
    );
    const client = a.app.get(WorkflowClient);
    const h = await client.start('admin.sum', { n: 3 }, { id: 'L-real' });
    await h.result({ timeoutMs: 10_000 });
  });
  afterAll(() => a.close());

  it('answers hundreds of bad inputs on every endpoint without a single 5xx, and changes no data', async () => {
    const { fiveXX, sent, histogram, intact } = await fuzz(a, label, stride);
    expect(sent).toBeGreaterThan(1000);
    expect(fiveXX).toEqual([]);
    expect(histogram[400]).toBeGreaterThan(500);
    expect(histogram[404]).toBeGreaterThan(50);
    expect(intact).toBe(true);
    const { rows } = await a.pool.query(`SELECT count(*)::int AS n FROM durable_runs WHERE id LIKE 'L-%' OR id LIKE 'Q-%'`);
    expect(rows[0].n).toBe(121);
  }, 120_000);

  it('answers a burst of concurrent requests without a 5xx while workflows keep running', async () => {
    const port = (a.app.getHttpServer().address() as AddressInfo).port;
    const client = a.app.get(WorkflowClient);
    const running = await client.start('admin.slow', { steps: 20, ms: 50 });
    const burst = probes(SEED + 1)
      .filter((p) => p.method === 'GET')
      .slice(0, 300);
    const all = [...burst, ...Array.from({ length: 100 }, (): Probe => ({ method: 'GET', path: 'stats' }))];
    const results = await Promise.all(all.map((p) => send(port, '/durable', p)));
    const statuses = results.map((r) => r.status);
    console.log(
      `admin burst (${label}): ${all.length} concurrent requests, 5xx: ${statuses.filter((s) => s >= 500).length}, 429: ${statuses.filter((s) => s === 429).length}`,
    );
    expect(statuses.filter((s) => s >= 500 || s === 0)).toEqual([]);
    expect(await running.result({ timeoutMs: 20_000 })).toBe('done');
  }, 60_000);
});
