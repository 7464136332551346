import request from 'supertest';
import { WorkflowClient } from 'nestjs-durable';
import { createAdminApp, type AdminApp } from './support/admin-app.js';

/** Runtime schedules created, changed and deleted through the admin API, no stub workflow or code needed. */
describe('admin API: schedule create, update, delete', () => {
  let a: AdminApp;
  const send = (method: 'post' | 'patch' | 'delete', path: string, body?: object) =>
    request(a.server)[method](`/durable/${path}`).send(body);

  beforeAll(async () => {
    a = await createAdminApp('admin_sched_crud');
  });
  afterAll(() => a.close());

  it('creates a schedule (201, idempotent), changes only the fields given, and deletes it', async () => {
    const def = {
      id: 'tenant-9',
      workflow: 'admin.sum',
      cron: '0 6 * * *',
      timeZone: 'Europe/Paris',
      input: { n: 2 },
      overlap: 'bufferOne',
    };
    const created = await send('post', 'schedules', def).expect(201);
    expect(created.body).toMatchObject({ id: 'tenant-9', workflowName: 'admin.sum', source: 'runtime', cron: '0 6 * * *', paused: false });
    expect(created.body.input).toEqual({ n: 2 });
    expect((await send('post', 'schedules', def).expect(201)).body.id).toBe('tenant-9');
    const clash = await send('post', 'schedules', { ...def, cron: '0 7 * * *' }).expect(409);
    expect(clash.body.code).toBe('SCHEDULE_CONFLICT');

    const changed = await send('patch', 'schedules/tenant-9', { cron: '30 8 * * 1-5', jitterMs: 1000 }).expect(200);
    expect(changed.body).toMatchObject({ cron: '30 8 * * 1-5', timeZone: 'Europe/Paris', overlap: 'bufferOne', jitterMs: 1000 });
    expect(new Date(changed.body.nextFireAt).toLocaleString('en-GB', { timeZone: 'Europe/Paris', hourCycle: 'h23' })).toContain('08:30:00');
    expect((await request(a.server).get('/durable/schedules/tenant-9').expect(200)).body.input).toEqual({ n: 2 });

    expect((await send('delete', 'schedules/tenant-9').expect(200)).body).toEqual({ id: 'tenant-9', deleted: true });
    await request(a.server).get('/durable/schedules/tenant-9').expect(404);
    await send('delete', 'schedules/tenant-9').expect(404);
    await send('patch', 'schedules/tenant-9', { cron: '@daily' }).expect(404);
  });

  it('answers 400 naming the field for a bad cron, time zone, policy or workflow, and creates nothing', async () => {
    const base = { id: 'bad-1', workflow: 'admin.sum', cron: '0 6 * * *' };
    const cases: Array<[object, string, RegExp]> = [
      [{ ...base, cron: 'every day' }, 'cron', /cron/],
      [{ ...base, cron: '0 0 31 2 *' }, 'cron', /cron/],
      [{ ...base, timeZone: 'Mars/Olympus' }, 'timeZone', /timeZone|time zone/i],
      [{ ...base, workflow: 'no.such.workflow' }, 'workflow', /no\.such\.workflow/],
      [{ ...base, overlap: 'sometimes' }, 'overlap', /overlap/],
      [{ ...base, jitterMs: -1 }, 'jitterMs', /jitterMs/],
      [{ ...base, paused: 'yes' }, 'paused', /true or false/],
      [{ ...base, every: '1h' }, 'every', /unknown field/],
      [{ workflow: 'admin.sum', cron: '0 6 * * *' }, 'id', /required/],
      [{ ...base, id: 'tenant\r\nx' }, 'id', /control characters/],
      [{ id: 'bad-1', workflow: 'admin.sum' }, 'cron', /required/],
    ];
    for (const [body, parameter, message] of cases) {
      const res = await send('post', 'schedules', body);
      expect({ body, status: res.status, parameter: res.body.parameter }).toEqual({ body, status: 400, parameter });
      expect(res.body.message).toMatch(message);
    }
    await request(a.server).get('/durable/schedules/bad-1').expect(404);
    await send('post', 'schedules', { id: 'ok-1', workflow: 'admin.sum', cron: '@hourly' }).expect(201);
    for (const body of [{}, { id: 'x' }, { paused: true }, { cron: 'nope' }, { timeZone: 'Nowhere/Land' }, { workflow: 'ghost' }]) {
      const res = await send('patch', 'schedules/ok-1', body);
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
    }
    expect((await request(a.server).get('/durable/schedules/ok-1').expect(200)).body).toMatchObject({ cron: '@hourly', timeZone: 'UTC' });
  });

  it('refuses to delete or change a schedule declared in code unless forced, and checks the origin like every action', async () => {
    // a declared schedule, as the boot sync writes it
    await a.app.get(WorkflowClient).schedules.create({ id: 'decl-1', workflow: 'admin.sum', cron: '@daily' });
    await a.pool.query(`UPDATE durable_schedules SET source = 'declared' WHERE id = 'decl-1'`);
    const refused = await send('delete', 'schedules/decl-1').expect(409);
    expect(refused.body.message).toMatch(/declared .* in code.*force=true/);
    await send('patch', 'schedules/decl-1', { cron: '@hourly' }).expect(409);
    const crossSite = await request(a.server).delete('/durable/schedules/decl-1?force=true').set('Origin', 'https://evil.example');
    expect(crossSite.status).toBe(403);
    const form = await request(a.server)
      .post('/durable/schedules')
      .set('Content-Type', 'application/x-www-form-urlencoded')
      .send('id=x&workflow=admin.sum&cron=@daily');
    expect(form.status).toBe(415);
    await send('delete', 'schedules/decl-1?force=true').expect(200);
    await request(a.server).get('/durable/schedules/decl-1').expect(404);
  });
});
