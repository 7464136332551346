import { InvalidArgumentError, WorkflowClient } from 'nestjs-durable';
import request from 'supertest';
import { CHART_FINISHED, CHART_STARTED } from '../../libs/durable/src/store/admin-charts.js';
import { createAdminApp, seedRuns, type AdminApp } from './support/admin-app.js';

/** Bulk actions by filter (dry run, token, bounded batches) and search by tags and input, over HTTP. */
describe('admin operations: bulk actions and search (real Nest app, real Postgres)', () => {
  let a: AdminApp;
  let client: WorkflowClient;
  const get = (path: string) => request(a.server).get(`/durable/${path}`);
  const post = (path: string, body?: object) => request(a.server).post(`/durable/${path}`).send(body);
  const statusOf = async (ids: string[]) =>
    (await a.pool.query<{ id: string; status: string }>(`SELECT id, status FROM durable_runs WHERE id = ANY($1) ORDER BY id`, [ids])).rows;

  /** Preview, then execute batch after batch; returns the preview and every batch's answer. */
  async function bulk(action: string, filter: object, batchSize: number, extra: object = {}) {
    const preview = (await post('runs/bulk/preview', { action, filter, ...extra }).expect(200)).body;
    const batches: any[] = [];
    let token: string | null = preview.token;
    while (token) {
      const res = (await post('runs/bulk/execute', { token, batchSize }).expect(200)).body;
      batches.push(res);
      token = res.token;
      if (batches.length > 100) throw new Error('bulk never completes');
    }
    return { preview, batches };
  }

  beforeAll(async () => {
    a = await createAdminApp('admin_ops', { worker: false });
    client = a.app.get(WorkflowClient);
    // 60 runs: statuses cycle PENDING, RUNNING, WAITING, SUCCEEDED, FAILED, CANCELLED (10 each), two workflows.
    await seedRuns(a.pool, { count: 60, prefix: 'B-', workflows: ['billing.charge', 'mail.send'], steps: 1 });
  });
  afterAll(() => a.close());

  describe('tags and input search', () => {
    it('stores start(…, { tags }) and finds runs by all of their tags and by input fields', async () => {
      const one = await client.start('admin.sum', { n: 2, customer: { id: 'acme', tier: 'gold' } }, { tags: ['customer:acme', 'batch:7'] });
      const two = await client.start('admin.sum', { n: 3, customer: { id: 'globex' } }, { tags: ['customer:globex', 'batch:7'] });
      await client.start('admin.sum', { n: 4 });
      const byTag = async (q: string) => (await get(`runs?${q}`).expect(200)).body.items.map((r: { id: string }) => r.id).sort();
      expect(await byTag('tag=batch:7')).toEqual([one.id, two.id].sort());
      expect(await byTag('tag=batch:7,customer:acme')).toEqual([one.id]);
      expect(await byTag('tag=batch:7&tag=customer:nobody')).toEqual([]);
      expect(await byTag(`input=${encodeURIComponent('{"customer":{"id":"globex"}}')}`)).toEqual([two.id]);
      expect(await byTag(`input=${encodeURIComponent('{"n":2}')}&tag=batch:7`)).toEqual([one.id]);
      const item = (await get(`runs?idPrefix=${one.id}`).expect(200)).body.items[0];
      expect(item.tags).toEqual(['customer:acme', 'batch:7']);
      expect((await get(`runs/${one.id}`).expect(200)).body.tags).toEqual(['customer:acme', 'batch:7']);
      // startMany stores them too.
      const [many] = await client.startMany([{ workflow: 'admin.sum', input: { n: 1 }, options: { tags: ['bulk-started'] } }]);
      expect(await byTag('tag=bulk-started')).toEqual([(many as { id: string }).id]);
    });

    it('uses the partial GIN index for a tag filter', async () => {
      await a.pool.query(`SET enable_seqscan = off`);
      const { rows } = await a.pool.query(`EXPLAIN SELECT id FROM durable_runs r WHERE r.tags @> ARRAY['batch:7'] AND r.tags <> '{}'`);
      await a.pool.query(`RESET enable_seqscan`);
      expect(rows.map((r) => r['QUERY PLAN']).join('\n')).toContain('durable_runs_tags_idx');
    });

    it('refuses bad tags at start and bad search parameters with 400', async () => {
      for (const tags of ['x', [''], ['a'.repeat(101)], Array.from({ length: 21 }, (_, i) => `t${i}`), [1], ['a\u0000b']]) {
        await expect(client.start('admin.sum', { n: 1 }, { tags: tags as never })).rejects.toThrow(InvalidArgumentError);
      }
      for (const q of [
        'input=nope',
        'input=[1]',
        'input={}',
        `input=${encodeURIComponent('{"a":"\\u0000"}')}`,
        `input=${encodeURIComponent('{"a":"\\ud800"}')}`,
      ]) {
        const res = await get(`runs?${q}`);
        expect({ q, status: res.status }).toEqual({ q, status: 400 });
        expect(res.body.message).toMatch(/input/);
      }
    });
  });

  describe('bulk actions', () => {
    it('previews without changing anything, then cancels in bounded batches with progress; later runs are untouched', async () => {
      const filter = { idPrefix: 'B-', workflow: 'billing.charge' };
      const before = await statusOf((await a.pool.query(`SELECT id FROM durable_runs WHERE id LIKE 'B-%'`)).rows.map((r) => r.id));
      const preview = (await post('runs/bulk/preview', { action: 'cancel', filter }).expect(200)).body;
      // billing.charge = even indexes; unfinished = PENDING (i%6=0), RUNNING (1), WAITING (2) → even i with i%6 in {0,2}: 20 of 60... counted exactly:
      const expected = before.filter((r, i) => i % 2 === 0 && ['PENDING', 'RUNNING', 'WAITING'].includes(r.status)).length;
      expect(preview).toMatchObject({ action: 'cancel', matched: expected, capped: false, token: expect.any(String) });
      expect(await statusOf(before.map((r) => r.id))).toEqual(before);
      // A run created after the preview matches the filter but is not the operator's confirmed set.
      await a.pool.query(
        `INSERT INTO durable_runs (id, workflow_name, queue, status, input) VALUES ('B-late', 'billing.charge', 'seed-a', 'PENDING', '{}')`,
      );
      const batches: any[] = [];
      let token: string | null = preview.token;
      while (token) {
        const res = (await post('runs/bulk/execute', { token, batchSize: 3 }).expect(200)).body;
        batches.push(res);
        token = res.token;
      }
      // complete on the batch that reaches the matched count: no extra call that finds nothing
      expect(batches.length).toBe(Math.ceil(expected / 3));
      expect(batches.every((b) => b.batch.done + b.batch.skipped <= 3)).toBe(true);
      expect(batches.map((b) => b.done)).toEqual(batches.map((_, i) => Math.min(expected, 3 * (i + 1))));
      expect(batches[batches.length - 1]).toMatchObject({ complete: true, done: expected, skipped: 0, matched: expected, token: null });
      const after = await statusOf(before.map((r) => r.id));
      after.forEach((r, i) => {
        const was = before[i].status;
        expect(r.status).toBe(i % 2 === 0 && ['PENDING', 'RUNNING', 'WAITING'].includes(was) ? 'CANCELLED' : was);
      });
      expect((await statusOf(['B-late']))[0].status).toBe('PENDING');
      const { rows: hist } = await a.pool.query(
        `SELECT count(*)::int AS n FROM durable_run_events WHERE kind = 'cancelled' AND run_id LIKE 'B-%'`,
      );
      expect(hist[0].n).toBe(expected);
    });

    it('retries FAILED runs only, resumes FAILED and CANCELLED, and deletes finished runs with their rows', async () => {
      const failed = (
        await a.pool.query(`SELECT id FROM durable_runs WHERE id LIKE 'B-%' AND workflow_name = 'mail.send' AND status = 'FAILED'`)
      ).rows;
      const { preview, batches } = await bulk('retry', { idPrefix: 'B-', workflow: 'mail.send' }, 4);
      expect(preview.matched).toBe(failed.length);
      expect(preview.byStatus).toEqual({ FAILED: failed.length });
      expect(batches.at(-1).done).toBe(failed.length);
      expect((await statusOf(failed.map((r) => r.id))).every((r) => r.status === 'PENDING')).toBe(true);

      const cancelledMail = (
        await a.pool.query(`SELECT id FROM durable_runs WHERE id LIKE 'B-%' AND workflow_name = 'mail.send' AND status = 'CANCELLED'`)
      ).rows;
      const resumed = await bulk('resume', { idPrefix: 'B-', workflow: 'mail.send', status: 'CANCELLED' }, 100);
      expect(resumed.batches.at(-1).done).toBe(cancelledMail.length);

      const finished = (
        await a.pool.query(`SELECT id FROM durable_runs WHERE id LIKE 'B-%' AND status IN ('SUCCEEDED','FAILED','CANCELLED')`)
      ).rows;
      const deleted = await bulk('delete', { idPrefix: 'B-' }, 5);
      expect(deleted.preview.matched).toBe(finished.length);
      expect(deleted.batches.at(-1).done).toBe(finished.length);
      expect(await statusOf(finished.map((r) => r.id))).toEqual([]);
      const { rows } = await a.pool.query(`SELECT count(*)::int AS n FROM durable_steps WHERE run_id = ANY($1)`, [
        finished.map((r) => r.id),
      ]);
      expect(rows[0].n).toBe(0);
      expect((await statusOf(['B-late']))[0].status).toBe('PENDING');
    });

    it('answers 400 to a bad action, filter, token or batch size, and changes nothing', async () => {
      const bad: Array<[string, object | undefined]> = [
        ['runs/bulk/preview', undefined],
        ['runs/bulk/preview', { action: 'explode' }],
        ['runs/bulk/preview', { action: 'cancel', filter: { stauts: 'FAILED' } }],
        ['runs/bulk/preview', { action: 'cancel', filter: { status: 'NOPE' } }],
        ['runs/bulk/preview', { action: 'delete', compensate: true }],
        ['runs/bulk/preview', { action: 'cancel', filter: [] }],
        ['runs/bulk/execute', {}],
        ['runs/bulk/execute', { token: 'not a token' }],
        ['runs/bulk/execute', { token: Buffer.from('{"v":1}').toString('base64url') }],
        [
          'runs/bulk/execute',
          {
            token: Buffer.from('{"v":1,"a":"cancel","q":{},"c":false,"t":"0000-01-01T00:00:00.000Z","k":null,"n":0,"d":0,"s":0}').toString(
              'base64url',
            ),
          },
        ],
      ];
      const preview = (await post('runs/bulk/preview', { action: 'cancel', filter: { idPrefix: 'B-' } }).expect(200)).body;
      bad.push(
        ['runs/bulk/execute', { token: preview.token, batchSize: 0 }],
        ['runs/bulk/execute', { token: preview.token, batchSize: 5000 }],
      );
      for (const [path, body] of bad) {
        const res = await post(path, body);
        expect({ path, body, status: res.status }).toEqual({ path, body, status: 400 });
      }
      expect((await statusOf(['B-late']))[0].status).toBe('PENDING');
    });

    it('acts on exactly the selected runs with the id filter', async () => {
      const { preview, batches } = await bulk('cancel', { id: ['B-late', 'B-none'] }, 10);
      expect(preview.matched).toBe(1);
      expect(batches.at(-1)).toMatchObject({ done: 1, complete: true });
      expect((await statusOf(['B-late']))[0].status).toBe('CANCELLED');
      const tooMany = await post('runs/bulk/preview', { action: 'cancel', filter: { id: Array.from({ length: 201 }, (_, i) => `x${i}`) } });
      expect(tooMany.status).toBe(400);
    });
  });

  describe('charts', () => {
    it('counts runs started and finished by status per bucket over 1 h, 24 h and 7 d', async () => {
      await a.pool.query(
        `INSERT INTO durable_runs (id, workflow_name, queue, status, input, created_at, finished_at)
         SELECT 'G-' || i, 'billing.charge', 'seed-a', CASE WHEN i % 4 = 0 THEN 'FAILED' ELSE 'SUCCEEDED' END, '{}',
                now() - interval '3 hours' - i * interval '1 second', now() - interval '3 hours'
         FROM generate_series(1, 40) i`,
      );
      const day = (await get('charts?range=24h').expect(200)).body;
      expect(day.range).toBe('24h');
      expect(day.bucketMs).toBe(1_800_000);
      expect(day.buckets.length).toBeGreaterThanOrEqual(48);
      const sum = (k: string, body: any) => body.buckets.reduce((n: number, b: any) => n + b[k], 0);
      const { rows } = await a.pool.query(
        `SELECT count(*) FILTER (WHERE created_at >= now() - interval '24 hours')::int AS started,
                count(*) FILTER (WHERE status = 'FAILED' AND finished_at >= now() - interval '24 hours')::int AS failed FROM durable_runs`,
      );
      expect(Math.abs(sum('started', day) - rows[0].started)).toBeLessThanOrEqual(0);
      expect(sum('failed', day)).toBe(rows[0].failed);
      const hour = (await get('charts?range=1h').expect(200)).body;
      expect(hour.buckets.length).toBeGreaterThanOrEqual(60);
      expect(sum('failed', hour)).toBeLessThan(sum('failed', day));
      expect((await get('charts?range=7d').expect(200)).body.bucketMs).toBe(10_800_000);
      await get('charts?range=2d').expect(400);
      await get('charts?span=1h').expect(400);
    });

    it('reads each chart with one range scan of its index (created_at, finished_at)', async () => {
      const c = await a.pool.connect();
      try {
        await c.query(`SET enable_seqscan = off`); // a few rows: the planner would read the table instead
        const plan = async (sql: string) =>
          (await c.query(`EXPLAIN ${sql}`, [new Date(Date.now() - 86_400_000).toISOString(), 1_800_000])).rows
            .map((r) => r['QUERY PLAN'])
            .join('\n');
        expect(await plan(CHART_STARTED)).toMatch(/(Index (Only )?Scan using|Bitmap Index Scan on) durable_runs_created_idx/);
        expect(await plan(CHART_FINISHED)).toMatch(/(Index Scan using|Bitmap Index Scan on) durable_runs_finished_idx/);
      } finally {
        await c.query(`RESET enable_seqscan`);
        c.release();
      }
    });
  });
});
