import request from 'supertest';
import { WorkflowClient } from 'nestjs-durable';
import { createAdminApp, type AdminApp } from '../admin/support/admin-app.js';

/** The admin API's schedule endpoints: list, detail with latest runs and next slots, pause, resume, trigger. */
describe('schedules: admin API', () => {
  let a: AdminApp;
  let client: WorkflowClient;

  beforeAll(async () => {
    a = await createAdminApp('sched_admin');
    client = a.app.get(WorkflowClient);
    await client.schedules.create({
      id: 'tenant-1',
      workflow: 'admin.sum',
      cron: '0 0 6 * * *',
      timeZone: 'Europe/Berlin',
      input: { n: 2 },
      overlap: 'bufferOne',
    });
    await client.schedules.create({ id: 'tenant-2', workflow: 'admin.sum', cron: '@hourly', paused: true });
  });
  afterAll(() => a.close());

  it('lists schedules with next and last fire, policies and paused state, paged', async () => {
    const res = await request(a.server).get('/durable/schedules?limit=1').expect(200);
    expect(res.body.items).toHaveLength(1);
    expect(res.body.items[0]).toMatchObject({
      id: 'tenant-1',
      workflowName: 'admin.sum',
      source: 'runtime',
      cron: '0 0 6 * * *',
      timeZone: 'Europe/Berlin',
      catchUp: 'latest',
      overlap: 'bufferOne',
      paused: false,
      lastRunId: null,
      registered: true,
    });
    expect(new Date(res.body.items[0].nextFireAt).toLocaleString('en-GB', { timeZone: 'Europe/Berlin', hourCycle: 'h23' })).toContain(
      '06:00:00',
    );
    expect(res.body.nextCursor).toBe('tenant-1');
    const next = await request(a.server).get('/durable/schedules?after=tenant-1').expect(200);
    expect(next.body.items.map((s: { id: string }) => s.id)).toEqual(['tenant-2']);
    expect(next.body.nextCursor).toBeNull();
    const paused = await request(a.server).get('/durable/schedules?paused=true').expect(200);
    expect(paused.body.items.map((s: { id: string }) => s.id)).toEqual(['tenant-2']);
    await request(a.server).get('/durable/schedules?paused=maybe').expect(400);
    await request(a.server).get('/durable/schedules?sort=id').expect(400);
  });

  it('trigger starts a run; the detail shows it among the latest runs, and the next slots', async () => {
    const t = await request(a.server).post('/durable/schedules/tenant-1/trigger').expect(200);
    expect(t.body).toMatchObject({ outcome: 'started' });
    await client.handle(t.body.runId).result({ timeoutMs: 10_000 });
    const d = await request(a.server).get('/durable/schedules/tenant-1').expect(200);
    expect(d.body.runs).toEqual([expect.objectContaining({ id: t.body.runId, status: 'SUCCEEDED', manual: true })]);
    expect(d.body).toMatchObject({ lastRunId: t.body.runId, lastRunStatus: 'SUCCEEDED' });
    expect(d.body.upcoming).toHaveLength(5);
    expect(d.body.upcoming[0]).toBe(d.body.nextFireAt);
    expect(Date.parse(d.body.upcoming[1]) - Date.parse(d.body.upcoming[0])).toBeGreaterThanOrEqual(23 * 3600_000);
    await request(a.server).get('/durable/schedules/nope').expect(404);
    await request(a.server).post('/durable/schedules/nope/trigger').expect(404);
  });

  it('pause and resume from the API', async () => {
    const p = await request(a.server).post('/durable/schedules/tenant-1/pause').expect(200);
    expect(p.body.paused).toBe(true);
    expect((await request(a.server).get('/durable/schedules/tenant-1').expect(200)).body.upcoming).toEqual([]);
    const r = await request(a.server).post('/durable/schedules/tenant-1/resume').expect(200);
    expect(r.body.paused).toBe(false);
    await request(a.server).post('/durable/schedules/tenant-1/resume?x=1').expect(400);
  });
});
