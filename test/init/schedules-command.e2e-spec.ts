import pg from 'pg';
import { runSchedulesCommand } from '../../libs/durable/src/cli/schedules-command.js';
import type { CliIo } from '../../libs/durable/src/cli/cli-io.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { seedRuns } from '../admin/support/admin-app.js';

// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

/** `npx nestjs-durable schedules …` against a real database, with no app and no workflow registered. */
describe('nestjs-durable schedules (CLI)', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  const cli = async (args: string[], confirm?: CliIo['confirm']) => {
    let out = '';
    let err = '';
    const io: CliIo = { cwd: process.cwd(), out: (t) => (out += `${t}\n`), err: (t) => (err += `${t}\n`), confirm };
    const code = await runSchedulesCommand(args, io, { DATABASE_URL: db.url });
    return { code, out, err };
  };
  const row = async (id: string) => (await pool.query(`SELECT * FROM durable_schedules WHERE id = $1`, [id])).rows[0];

  beforeAll(async () => {
    db = await createTestDatabase('schedules_cli');
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('creates, shows, updates, pauses, resumes and lists a schedule of a workflow this process does not register', async () => {
    const created = await cli([
      'create',
      'tenant-7',
      '--workflow',
      'reports.nightly',
      '--cron',
      '0 3 * * *',
      '--time-zone',
      'Europe/Paris',
      '--input',
      '{"tenant":7}',
      '--jitter',
      '30s',
    ]);
    expect(created.code).toBe(0);
    expect(created.out).toContain('Schedule tenant-7: workflow reports.nightly, 0 3 * * * (Europe/Paris), next 20');
    expect(created.err).toContain('no run of workflow "reports.nightly" in this database yet');
    expect(await row('tenant-7')).toMatchObject({
      workflow_name: 'reports.nightly',
      source: 'runtime',
      time_zone: 'Europe/Paris',
      jitter_ms: 30_000,
    });
    // The same definition again changes nothing; another one is a conflict (refused, 1).
    expect(
      (
        await cli([
          'create',
          'tenant-7',
          '--workflow',
          'reports.nightly',
          '--cron',
          '0 3 * * *',
          '--time-zone',
          'Europe/Paris',
          '--input',
          '{"tenant":7}',
          '--jitter',
          '30s',
        ])
      ).code,
    ).toBe(0);
    const conflict = await cli(['create', 'tenant-7', '--workflow', 'reports.nightly', '--cron', '0 4 * * *']);
    expect(conflict).toMatchObject({ code: 1, err: expect.stringContaining('exists already') });

    const updated = await cli(['update', 'tenant-7', '--cron', '30 2 * * *', '--overlap', 'bufferOne']);
    expect(updated.code).toBe(0);
    expect(await row('tenant-7')).toMatchObject({ cron: '30 2 * * *', overlap: 'bufferOne' });
    expect((await cli(['update', 'tenant-7', '--cron', 'not a cron'])).code).toBe(1);

    expect((await cli(['pause', 'tenant-7'])).out).toContain('Schedule tenant-7: paused.');
    expect((await row('tenant-7')).paused).toBe(true);
    expect((await cli(['resume', 'tenant-7'])).out).toMatch(/Schedule tenant-7: active, next 20/);

    const list = await cli(['list']);
    expect(list.out).toMatch(/^ID\s+WORKFLOW\s+CRON\s+TIME ZONE\s+STATE\s+NEXT\s+LAST RUN\n/);
    expect(list.out).toMatch(/tenant-7\s+reports\.nightly\s+30 2 \* \* \*\s+Europe\/Paris\s+active runtime/);
    const show = JSON.parse((await cli(['show', 'tenant-7', '--json'])).out);
    expect(show).toMatchObject({ id: 'tenant-7', input: { tenant: 7 }, runs: [] });
    expect((await cli(['show', 'no-such'])).code).toBe(1);
  });

  it("trigger starts a real run only when confirmed, on the queue of the workflow's runs", async () => {
    const nothing = await cli(['trigger', 'tenant-7']);
    expect(nothing).toMatchObject({ code: 1, err: expect.stringContaining('pass --queue') });
    await seedRuns(pool, { count: 1, prefix: 'earlier-', workflows: ['reports.nightly'], queues: ['reports'] });

    const unconfirmed = await cli(['trigger', 'tenant-7']);
    expect(unconfirmed).toMatchObject({ code: 1, err: expect.stringContaining('needs a yes') });
    const declined = await cli(['trigger', 'tenant-7'], async () => false);
    expect(declined.code).toBe(1);
    const asked: string[] = [];
    const yes = await cli(['trigger', 'tenant-7'], async (q) => (asked.push(q), true));
    expect(asked).toEqual(['Start a run of workflow "reports.nightly" now (schedule "tenant-7", queue reports)? [y/N] ']);
    expect(yes.code).toBe(0);
    const { rows } = await pool.query(`SELECT id, queue, status, input FROM durable_runs WHERE schedule_id = 'tenant-7'`);
    expect(rows).toEqual([
      { id: expect.stringMatching(/^sched:tenant-7:.*:manual$/), queue: 'reports', status: 'PENDING', input: expect.anything() },
    ]);
    expect(yes.out).toContain(`tenant-7: started — run ${rows[0].id}`);
    // Overlap bufferOne with that run still PENDING: the next trigger is buffered.
    expect((await cli(['trigger', 'tenant-7', '--yes', '--queue', 'other'])).out).toContain('tenant-7: buffered');
  });

  it('a declared schedule cannot be updated here; delete needs a yes; ids with control characters are escaped', async () => {
    await pool.query(
      `INSERT INTO durable_schedules (id, workflow_name, source, cron, time_zone, catch_up, catch_up_window_ms, overlap, jitter_ms, paused, next_fire_at)
       SELECT 'declared\x1b[2J\x07', 'orders.sweep', 'declared', '*/5 * * * *', 'UTC', 'latest', 86400000, 'skip', 0, false, now() + interval '5 minutes'`,
    );
    const upd = await cli(['update', 'declared\x1b[2J\x07', '--cron', '* * * * *']);
    expect(upd.code).toBe(1);
    expect(upd.err).toContain('is declared on workflow "orders.sweep" in code');
    expect(upd.err).not.toMatch(RAW_CONTROL);
    const list = await cli(['list']);
    expect(list.out).not.toMatch(RAW_CONTROL);
    expect(list.out).toContain('declared\\x1b[2J\\x07  orders.sweep');
    expect(list.out.trimEnd().split('\n')).toHaveLength(4);

    expect((await cli(['delete', 'tenant-7'])).code).toBe(1);
    expect(await row('tenant-7')).toBeDefined();
    expect((await cli(['delete', 'tenant-7', '--yes'])).out).toContain('Schedule tenant-7 deleted (its runs stay).');
    expect(await row('tenant-7')).toBeUndefined();
    expect((await cli(['delete', 'tenant-7', '--yes'])).code).toBe(1);
    expect((await cli(['create', 'x', '--workflow', 'w'])).code).toBe(2);
    expect((await cli(['pause'])).code).toBe(2);
  });
});
