import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { runRunsCommand } from '../../libs/durable/src/cli/runs-command.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import pg from 'pg';
import { seedRuns } from '../admin/support/admin-app.js';
import { run } from './support/temp-app.js';

/** A control character a terminal would act on (line feeds between lines aside), or a bidi override. */
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]/;

/** `npx nestjs-durable runs …` against a real database with no app running. */
describe('nestjs-durable runs (CLI)', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  const cli = async (...args: string[]) => {
    let out = '';
    let err = '';
    const code = await runRunsCommand(
      args,
      { cwd: process.cwd(), out: (t) => (out += `${t}\n`), err: (t) => (err += `${t}\n`) },
      { DATABASE_URL: db.url },
    );
    return { code, out, err };
  };
  const status = async (id: string) => (await pool.query(`SELECT status FROM durable_runs WHERE id = $1`, [id])).rows[0]?.status;

  beforeAll(async () => {
    db = await createTestDatabase('runs_cli');
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    // 36 runs: statuses cycle PENDING, RUNNING, WAITING, SUCCEEDED, FAILED, CANCELLED; two workflows; 3 steps each.
    await seedRuns(pool, { count: 36, prefix: 'K-', workflows: ['billing.charge', 'mail.send'], steps: 3 });
    await pool.query(`UPDATE durable_runs SET tags = ARRAY['batch:9'] WHERE id IN ('K-00004', 'K-00010')`);
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('lists with the admin API filters, as text and as JSON', async () => {
    const json = await cli('list', '--status', 'FAILED', '--workflow', 'billing.charge', '--json');
    expect(json.code).toBe(0);
    const page = JSON.parse(json.out);
    expect(page.items.map((r: { id: string }) => r.id).sort()).toEqual(['K-00004', 'K-00010', 'K-00016', 'K-00022', 'K-00028', 'K-00034']);
    expect(page.total).toBe(6);
    expect(JSON.parse((await cli('list', '--status', 'FAILED', '--workflow', 'mail.send', '--json')).out).total).toBe(0);
    const tagged = JSON.parse((await cli('list', '--tag', 'batch:9', '--json')).out);
    expect(tagged.items.map((r: { id: string }) => r.id).sort()).toEqual(['K-00004', 'K-00010']);
    const text = await cli('list', '--id-prefix', 'K-0000', '--limit', '5');
    expect(text.out).toMatch(/^ID\s+WORKFLOW\s+STATUS\s+STEPS\s+CREATED/);
    expect(text.out).toContain('10 run(s) match (showing 5');
  });

  it('shows a run with its steps', async () => {
    const r = await cli('show', 'K-00004');
    expect(r.code).toBe(0);
    expect(r.out).toContain('K-00004  billing.charge  FAILED');
    expect(r.out).toContain('error Error: seeded failure 4');
    expect(r.out.match(/^\d\s+step\d\s+SUCCEEDED/gm)).toHaveLength(3);
    expect(JSON.parse((await cli('show', 'K-00004', '--json')).out).steps).toHaveLength(3);
  });

  it('exports a run with its checkpoints as JSON: to stdout, or to a file with --out', async () => {
    const printed = await cli('export', 'K-00004');
    expect(printed.code).toBe(0);
    const doc = JSON.parse(printed.out);
    expect(doc).toMatchObject({
      format: 'nestjs-durable.run/1',
      run: { id: 'K-00004', workflowName: 'billing.charge', status: 'FAILED', input: { i: 4 }, error: { message: 'seeded failure 4' } },
    });
    expect(doc.steps.map((s: { seq: number; name: string; output: unknown }) => [s.seq, s.name, s.output])).toEqual([
      [0, 'step0', { k: 0 }],
      [1, 'step1', { k: 1 }],
      [2, 'step2', { k: 2 }],
    ]);
    const dir = mkdtempSync(join(tmpdir(), 'runs-export-'));
    try {
      const saved = await cli('export', 'K-00004', '--out', join(dir, 'run.json'));
      expect(saved).toMatchObject({ code: 0, out: '' });
      expect(saved.err).toContain(`Exported run K-00004 (billing.charge, FAILED, 3 step(s)) to ${join(dir, 'run.json')}`);
      const file = JSON.parse(readFileSync(join(dir, 'run.json'), 'utf8'));
      expect({ ...file, exportedAt: null }).toEqual({ ...doc, exportedAt: null });
      const unwritable = await cli('export', 'K-00004', '--out', join(dir, 'no-such-folder', 'run.json'));
      expect(unwritable.code).toBe(1);
      expect(unwritable.err).toContain('could not write');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect((await cli('export', 'no-such-run')).err).toContain('No run with id "no-such-run"');
    expect((await cli('export')).code).toBe(2);
    expect((await cli('show', 'K-00004', '--out', 'x.json')).code).toBe(2);
  });

  it('cancels, resumes and forks one run with the engine statements', async () => {
    expect((await cli('cancel', 'K-00001')).out).toContain('K-00001: CANCELLED');
    expect(await status('K-00001')).toBe('CANCELLED');
    expect((await cli('resume', 'K-00001')).code).toBe(0);
    expect(await status('K-00001')).toBe('PENDING');
    const forked = JSON.parse((await cli('fork', 'K-00003', '--from-step', '2', '--json')).out);
    expect(forked).toMatchObject({ forkedFrom: 'K-00003', copiedSteps: 2, workflowName: 'mail.send' });
    expect(await status(forked.id)).toBe('PENDING');
    const { rows } = await pool.query(`SELECT kind FROM durable_run_events WHERE run_id = 'K-00001' ORDER BY id`);
    expect(rows.map((r) => r.kind)).toEqual(['cancelled', 'resumed']);
  });

  it('retries every FAILED run with a tag: a dry run first, then --yes with progress', async () => {
    // Three FAILED runs carry the tag batch:9; other FAILED runs are left alone.
    await pool.query(`UPDATE durable_runs SET tags = ARRAY['batch:9'] WHERE id = 'K-00016'`);
    const failed = ['K-00004', 'K-00010', 'K-00016'];
    const dry = await cli('retry', '--all', '--tag', 'batch:9');
    expect(dry.code).toBe(0);
    expect(dry.out).toContain('Would retry 3 run(s) (3 FAILED). Nothing changed: add --yes to do it.');
    for (const id of failed) expect(await status(id)).toBe('FAILED');
    const done = await cli('retry', '--all', '--tag', 'batch:9', '--yes', '--batch-size', '2');
    expect(done.out).toContain('retry: 3 run(s) done, 0 skipped.');
    expect(done.err).toContain('retry: 2 of 3');
    for (const id of failed) expect(await status(id)).toBe('PENDING');
    expect(await status('K-00022')).toBe('FAILED');
    const { rows } = await pool.query(
      `SELECT run_id, detail->>'actor' AS actor FROM durable_run_events WHERE kind = 'resumed' AND run_id = ANY($1)`,
      [failed],
    );
    expect(rows.map((r) => r.actor)).toEqual(failed.map(() => `cli:${userInfo().username}`));
  });

  it('refuses what it cannot do with a message and exit code 1 or 2', async () => {
    expect((await cli('list', '--status', 'NOPE')).code).toBe(1);
    expect((await cli('list', '--status', 'NOPE')).err).toContain('"NOPE" is not a status');
    expect((await cli('show', 'no-such-run')).err).toContain('No run with id "no-such-run"');
    expect((await cli('resume', 'K-00000')).code).toBe(1); // PENDING: nothing to resume
    const retryCancelled = await cli('retry', 'K-00005'); // retry takes FAILED runs, as with --all
    expect(retryCancelled).toMatchObject({ code: 1, err: expect.stringContaining('retry applies to runs that are FAILED') });
    expect(await status('K-00005')).toBe('CANCELLED');
    expect((await cli('delete', 'K-00003')).code).toBe(2);
    expect((await cli('explode')).code).toBe(2);
    expect((await cli('cancel')).code).toBe(2);
    const noUrl = await runRunsCommand(['list'], { cwd: '.', out: () => {}, err: () => {} }, {});
    expect(noUrl).toBe(2);
  });

  it('takes the start of an id that only one run has; refuses an ambiguous or unknown one clearly', async () => {
    const shown = await cli('show', 'K-00035');
    expect(shown).toMatchObject({ code: 0, out: expect.stringContaining('K-00035  mail.send') });
    await seedRuns(pool, { count: 1, prefix: 'only-one-', workflows: ['billing.charge'], steps: 1 });
    expect((await cli('show', 'only-o')).out).toContain('only-one-00000  billing.charge  PENDING');
    expect(JSON.parse((await cli('export', 'only-o')).out).run.id).toBe('only-one-00000');
    const ambiguous = await cli('show', 'K-0001');
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.err).toMatch(/"K-0001" is the start of 10 run ids \("K-0001\d", "K-0001\d", …\): give more of the id\./);
    const none = await cli('cancel', 'nothing-like-this');
    expect(none).toMatchObject({ code: 1, err: expect.stringContaining('No run with id "nothing-like-this", nor one whose id starts so') });
  });

  it('prints ids, tags, workflow names and errors with control characters escaped, tables aligned', async () => {
    // Written with SQL: the API refuses such ids, but rows written before (or by hand) may hold them.
    const hostile = 'evil\x1b]0;pwned\x07\x1b[2J\r\n';
    await seedRuns(pool, { count: 2, prefix: hostile, workflows: ['wf\x1b[31mred'], steps: 1 });
    await pool.query(
      `UPDATE durable_runs SET tags = ARRAY[$2], status = 'FAILED', error = jsonb_build_object('name', 'Error', 'message', $3::text)
        WHERE id LIKE $1 || '%'`,
      [hostile, 'tag\x9b2J\u202e', 'boom\x1b[2J\nline two\x07'],
    );
    const list = await cli('list', '--id-prefix', 'evil');
    const show = await cli('show', `${hostile}00001`);
    for (const text of [list.out, list.err, show.out, show.err]) expect(text).not.toMatch(RAW_CONTROL);
    const lines = list.out.trimEnd().split('\n');
    expect(lines).toHaveLength(4); // header, two runs, the count
    expect(lines[1]).toContain('evil\\x1b]0;pwned\\x07\\x1b[2J\\r\\n00001  wf\\x1b[31mred  FAILED');
    expect(lines[2]).toContain('evil\\x1b]0;pwned\\x07\\x1b[2J\\r\\n00000  wf\\x1b[31mred  FAILED');
    expect(lines[1]).toContain('boom\\x1b[2J\\nline two\\x07 [tag\\x9b2J\\u202e]');
    expect(lines[1].indexOf('FAILED')).toBe(lines[0].indexOf('STATUS'));
    expect(show.out.split('\n')[0]).toBe('evil\\x1b]0;pwned\\x07\\x1b[2J\\r\\n00001  wf\\x1b[31mred  FAILED');
    expect(show.out).toContain('error Error: boom\\x1b[2J\\nline two\\x07');
    // JSON stays JSON (the C1 and bidi characters as \u escapes) and decodes to the stored text.
    const json = await cli('show', `${hostile}00001`, '--json');
    expect(json.out).not.toMatch(RAW_CONTROL);
    expect(JSON.parse(json.out).tags).toEqual(['tag\x9b2J\u202e']);
    // An error message naming such an id is escaped too.
    expect((await cli('resume', `${hostile}00001`, '--database-url', db.url)).code).toBe(0);
    const refused = await cli('resume', `${hostile}00001`);
    expect(refused.code).toBe(1);
    expect(refused.err).not.toMatch(RAW_CONTROL);
  });

  it('runs as the package binary in a child process', async () => {
    const r = await run(
      process.execPath,
      ['--import', 'tsx', join(process.cwd(), 'libs/durable/src/cli/main.ts'), 'runs', 'list', '--id-prefix', 'K-0001', '--json'],
      process.cwd(),
      {
        DATABASE_URL: db.url,
      },
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out).total).toBe(10);
  }, 30_000);
});
