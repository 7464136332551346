import http from 'node:http';
import { WorkflowClient } from 'nestjs-durable';
import request from 'supertest';
import { LiveFeed, type LiveEvent } from '../../libs/durable/src/admin/live-feed.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { createAdminApp, seedRuns, sleep, type AdminApp } from './support/admin-app.js';
import { eventually } from '../support/engine-harness.js';

/** Live updates: one shared statement per interval whatever the number of subscribers, and the SSE endpoint. */
describe('admin live updates (Server-Sent Events)', () => {
  let a: AdminApp;
  let url: string;

  beforeAll(async () => {
    a = await createAdminApp('admin_live', { worker: false });
    await a.app.listen(0, '127.0.0.1');
    url = (await a.app.getUrl()).replace('[::1]', '127.0.0.1');
    await seedRuns(a.pool, { count: 12, prefix: 'V-' });
  });
  afterAll(() => a.close());

  it('runs one statement per tick for 30 subscribers and gives each what concerns it', async () => {
    const sql = pgSqlClient(a.pool, { prepared: false });
    const sent: string[] = [];
    const counting = { query: (s: any, p?: readonly unknown[]) => (sent.push(typeof s === 'string' ? s : s.name), sql.query(s, p)) };
    let statsCalls = 0;
    const feed = new LiveFeed(
      () => ({ sql: counting as never, history: true, layout: { partitions: null } }),
      async () => ({ stats: ++statsCalls }),
      { intervalMs: 3_600_000, pingMs: 0, statsEveryMs: 0, slackMs: 1000, maxLookBackMs: 60_000 },
    );
    const got: LiveEvent[][] = [];
    const offs = Array.from({ length: 30 }, (_, i) => {
      const events: LiveEvent[] = [];
      got.push(events);
      return feed.subscribe({ run: i === 0 ? 'V-00003' : null, stats: i < 10 }, (e) => events.push(e));
    });
    expect(got.every((e) => e[0].type === 'hello')).toBe(true);
    await feed.tick(); // first round: primes the versions
    await a.pool.query(`UPDATE durable_runs SET updated_at = now(), status = 'CANCELLED' WHERE id IN ('V-00003', 'V-00007')`);
    await feed.tick();
    await feed.tick();
    expect(sent.filter((n) => n === 'durable_live_tick')).toHaveLength(3);
    expect(sent).toHaveLength(3);
    expect(statsCalls).toBeLessThanOrEqual(3);
    const changes = got.map((events) => events.filter((e) => e.type === 'changes').flatMap((e) => (e.data as { ids: string[] }).ids));
    for (const ids of changes) expect(ids).toEqual(expect.arrayContaining(['V-00003', 'V-00007']));
    expect(got[0].some((e) => e.type === 'run' && (e.data as { id: string }).id === 'V-00003')).toBe(true);
    expect(got.slice(1).some((events) => events.some((e) => e.type === 'run'))).toBe(false);
    expect(got.slice(0, 10).every((events) => events.some((e) => e.type === 'stats'))).toBe(true);
    expect(got.slice(10).some((events) => events.some((e) => e.type === 'stats'))).toBe(false);
    offs.forEach((off) => off());
    expect(feed.subscribers).toBe(0);
  });

  it('names a run written by a transaction that commits long after it began, once, also from a savepoint', async () => {
    const feed = new LiveFeed(
      () => ({ sql: pgSqlClient(a.pool, { prepared: false }), history: true, layout: { partitions: null } }),
      async () => ({}),
      { intervalMs: 3_600_000, pingMs: 3_600_000, statsEveryMs: 3_600_000, slackMs: 1000, maxLookBackMs: 60_000 },
    );
    const events: LiveEvent[] = [];
    const off = feed.subscribe({ run: null, stats: false }, (e) => events.push(e));
    const named = () => events.filter((e) => e.type === 'changes').flatMap((e) => (e.data as { ids: string[] }).ids);
    const late = await a.pool.connect();
    const saved = await a.pool.connect();
    try {
      await feed.tick();
      // Two transactions begin (updated_at = now() is their start), write later, and commit 2.5 s after they began;
      // one writes its row inside a savepoint (a subtransaction id).
      await late.query('BEGIN');
      await saved.query('BEGIN');
      await late.query('SELECT 1');
      await saved.query('SELECT 1');
      await feed.tick();
      await sleep(1200);
      await late.query(`UPDATE durable_runs SET status = 'CANCELLED', updated_at = now() WHERE id = 'V-00001'`);
      await saved.query('SAVEPOINT s1');
      await saved.query(`UPDATE durable_runs SET status = 'CANCELLED', updated_at = now() WHERE id = 'V-00002'`);
      await saved.query('RELEASE SAVEPOINT s1');
      await feed.tick();
      await sleep(1300);
      await feed.tick();
      expect(named().filter((id) => id === 'V-00001' || id === 'V-00002')).toEqual([]);
      await late.query('COMMIT');
      await saved.query('COMMIT');
      const { rows } = await a.pool.query<{ age_ms: number }>(
        `SELECT extract(epoch FROM clock_timestamp() - updated_at) * 1000 AS age_ms FROM durable_runs WHERE id IN ('V-00001', 'V-00002')`,
      );
      // Older than a 1-s look-back when it becomes visible: a feed that only looked 1 s back would miss it.
      for (const r of rows) expect(Number(r.age_ms)).toBeGreaterThan(2000);
      const committed = named().length;
      await feed.tick();
      expect(named().slice(committed).sort()).toEqual(['V-00001', 'V-00002']);
      const before = named().length;
      await feed.tick();
      await feed.tick();
      expect(named().slice(before)).toEqual([]);
    } finally {
      await late.query('ROLLBACK').catch(() => {});
      await saved.query('ROLLBACK').catch(() => {});
      late.release();
      saved.release();
      off();
    }
  });

  it('streams hello, then the change of a run started after connecting, over HTTP', async () => {
    const events: Array<{ type: string; data: any }> = [];
    const req = http.get(`${url}/durable/live?stats=true`, { headers: { Accept: 'text/event-stream' } });
    const res = await new Promise<http.IncomingMessage>((resolve) => req.on('response', resolve));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/event-stream');
    expect(res.headers['x-accel-buffering']).toBe('no');
    // the admin headers, as on every admin answer
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['cache-control']).toContain('no-store');
    expect(res.headers['x-powered-by']).toBeUndefined();
    let buf = '';
    res.on('data', (chunk: Buffer) => {
      buf += chunk.toString('utf8');
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const type = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (type && data) events.push({ type, data: JSON.parse(data) });
      }
    });
    try {
      await eventually(async () => events.some((e) => e.type === 'hello'), 5_000, 'hello');
      const run = await a.app.get(WorkflowClient).start('admin.sum', { n: 1 });
      await eventually(async () => events.some((e) => e.type === 'changes' && e.data.ids.includes(run.id)), 10_000, 'the change to arrive');
      await eventually(async () => events.some((e) => e.type === 'stats' && e.data.totals), 10_000, 'stats to arrive');
    } finally {
      req.destroy();
    }
    await eventually(
      async () => (a.app.get((await import('../../libs/durable/src/admin/admin-service.js')).AdminService) as any).live.subscribers === 0,
      5_000,
      'the subscription to end with the connection',
    );
  });

  it('answers 400 to unknown or bad parameters', async () => {
    for (const q of ['stats=maybe', 'nope=1', `run=${'x'.repeat(300)}`]) {
      const res = await request(a.server).get(`/durable/live?${q}`);
      expect({ q, status: res.status }).toEqual({ q, status: 400 });
    }
  });
});
