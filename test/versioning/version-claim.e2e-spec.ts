import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import request from 'supertest';
import { verifyRuns, WorkflowRegistry, type DurableEngine } from 'nestjs-durable';
import { createAdminApp, type AdminApp } from '../admin/support/admin-app.js';
import { EngineHarness, eventually, sleep } from '../support/engine-harness.js';
import { launchChromium } from '../admin/support/browser.js';
import { chromiumAvailable } from '../support/chromium.js';

const ARTIFACTS = join(process.cwd(), 'test-artifacts');

/**
 * Version-aware claiming (engine option runVersions) during a rolling deploy: two builds side by
 * side, each claiming only the runs its version started (and runs without a version); the admin
 * API and the dashboard show which versions have runs in flight.
 */
describe('versioning: runVersions keeps runs on the build that started them', () => {
  let h: EngineHarness;
  let admin: AdminApp;
  const ran = new Map<string, string>();
  const build = (label: string) => ({ job: async (input: { id: string }) => (ran.set(input.id, label), label) });
  let c1: DurableEngine;
  let c2: DurableEngine;
  let c0: DurableEngine;
  beforeAll(async () => {
    h = await EngineHarness.create('version_claim');
    c1 = await h.engine(build('client'), { worker: false, appVersion: '1' });
    c2 = await h.engine(build('client'), { worker: false, appVersion: '2' });
    c0 = await h.engine(build('client'), { worker: false });
  });
  afterAll(async () => {
    await admin?.close();
    await h.close();
  });

  const start = (c: DurableEngine, ids: string[]) => Promise.all(ids.map((id) => c.startRun('job', { id }, { id })));
  const statusOf = async (ids: string[]) =>
    (await h.query<{ id: string; status: string }>('SELECT id, status FROM durable_runs WHERE id = ANY($1) ORDER BY id', [ids])).map(
      (r) => r.status,
    );
  const V1 = ['v1-a', 'v1-b', 'v1-c'];
  const V2 = ['v2-a', 'v2-b'];
  const NONE = ['none-a', 'none-b'];

  it("build 2 claims its own runs and runs without a version, never build 1's", async () => {
    await h.engine(build('build-2'), { appVersion: '2', runVersions: 'own', workerId: 'build-2' });
    await start(c1, V1);
    await start(c2, V2);
    await start(c0, NONE);
    await eventually(async () => (await statusOf([...V2, ...NONE])).every((s) => s === 'SUCCEEDED'), 15_000, 'build 2 runs');
    await sleep(500); // several polls of build 2
    expect(await statusOf(V1)).toEqual(['PENDING', 'PENDING', 'PENDING']);
    expect([...V2, ...NONE].map((id) => ran.get(id))).toEqual(['build-2', 'build-2', 'build-2', 'build-2']);
  });

  it('verify of a build without the workflow: every pending run of it would be stranded', async () => {
    const report = await verifyRuns(new WorkflowRegistry(), h.db.url);
    expect(report).toMatchObject({ ok: false, checked: 3, failed: 3 });
    expect(report.workflows[0].failures.map((f) => [f.runId, f.kind, f.appVersion])).toEqual(V1.map((id) => [id, 'unknown-workflow', '1']));
    expect(report.workflows[0].failures[0].message).toBe(
      'this build has no workflow "job": no instance running it would ever execute the run',
    );
  });

  it('the admin API and the dashboard show the versions with runs in flight', async () => {
    admin = await createAdminApp('version_claim_admin', { worker: false, engine: { appVersion: '2', runVersions: ['1.9'] } }, h.db);
    const res = await request(admin.server).get('/durable/versions').expect(200);
    expect(res.body).toMatchObject({
      appVersion: '2',
      claims: ['2', '1.9'],
      versions: [{ appVersion: '1', inFlight: 3, pending: 3, running: 0, waiting: 0, workflows: [{ workflow: 'job', inFlight: 3 }] }],
    });
    expect(res.body.versions).toHaveLength(1);
    await request(admin.server).get('/durable/versions?x=1').expect(400);
    if (!chromiumAvailable('the versions panel of the dashboard')) return;
    mkdirSync(ARTIFACTS, { recursive: true });
    await admin.app.listen(0, '127.0.0.1');
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto(`${(await admin.app.getUrl()).replace('[::1]', '127.0.0.1')}/durable/`);
      await page.click('#versions summary');
      await page.waitForSelector('tr[data-version="1"]');
      expect(await page.locator('tr[data-version="1"]').textContent()).toMatch(/^1\s*3\s*3\s*0\s*0\s*job 3/);
      expect(await page.locator('#versions-self').textContent()).toBe(
        'This instance: version 2 · claims runs of 2, 1.9 (and runs without a version)',
      );
      await page.screenshot({ path: join(ARTIFACTS, 'dashboard-versions.png') });
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 60_000);

  it('build 1 drains its own runs; then no version has runs in flight', async () => {
    await h.engine(build('build-1'), { appVersion: '1', runVersions: 'own', workerId: 'build-1' });
    await eventually(async () => (await statusOf(V1)).every((s) => s === 'SUCCEEDED'), 15_000, 'build 1 runs');
    expect(V1.map((id) => ran.get(id))).toEqual(['build-1', 'build-1', 'build-1']);
    const res = await request(admin.server).get('/durable/versions').expect(200);
    expect(res.body.versions).toEqual([]);
  });
});
