import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowClient } from 'nestjs-durable';
import pw from 'playwright-core';
import { createAdminApp, type AdminApp } from '../admin/support/admin-app.js';
import { eventually } from '../support/engine-harness.js';
import { launchChromium } from '../admin/support/browser.js';
import { describeBrowser } from '../support/chromium.js';

/**
 * The dashboard's flow-control panel in headless Chromium: set a queue's limits from the page, see
 * the queue's executing runs against its limit and its busiest keys, see in a run's detail why it
 * has not started, and reset the limit.
 */
const ARTIFACTS = join(process.cwd(), 'test-artifacts');

describeBrowser('flow-control panel of the dashboard in headless Chromium', () => {
  let a: AdminApp;
  let browser: pw.Browser;
  let page: pw.Page;
  let client: WorkflowClient;
  const errors: string[] = [];

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    a = await createAdminApp('flow_dashboard');
    await a.app.listen(0, '127.0.0.1');
    client = a.app.get(WorkflowClient);
    // A queue no worker serves: one run of key t1 executing, two of t1 waiting.
    await a.pool.query(`
      INSERT INTO durable_runs (id, workflow_name, queue, status, concurrency_key, available_at, lease_owner, lease_expires_at, lease_epoch, attempt, started_at)
      VALUES ('F-run', 'billing.charge', 'seed-f', 'RUNNING', 't1', now(), 'seed-worker', now() + interval '1 hour', 1, 1, now())`);
    await a.pool.query(`
      INSERT INTO durable_runs (id, workflow_name, queue, status, concurrency_key, available_at)
      VALUES ('F-wait-1', 'billing.charge', 'seed-f', 'PENDING', 't1', now()), ('F-wait-2', 'billing.charge', 'seed-f', 'PENDING', 't1', now())`);
    // a run waiting out a debounce, and a singleton run holding its dedupe key
    await a.pool.query(`
      INSERT INTO durable_runs (id, workflow_name, queue, status, available_at, debounce_key, debounce_until, dedupe_key)
      VALUES ('F-debounced', 'search.reindex', 'seed-g', 'PENDING', now() + interval '1 hour', 'doc-42', now() + interval '2 hours', NULL),
             ('F-single', 'accounts.sync', 'seed-g', 'WAITING', now() + interval '1 hour', NULL, NULL, 'account-9')`);
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('response', (r) => r.status() >= 400 && !r.url().endsWith('/favicon.ico') && errors.push(`${r.status()} ${r.url()}`));
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await a?.close();
  });

  it('sets limits from the page, shows usage and keys, says why a run waits, resets', async () => {
    const url = (await a.app.getUrl()).replace('[::1]', '127.0.0.1');
    await page.goto(`${url}/durable/`);
    await page.click('#flow summary');
    await page.waitForSelector('#flow-body .empty');
    await page.click('#flow-body .flow-add summary');
    await page.fill('#flow-new-queue', 'seed-f');
    await page.fill('.flow-add input[name="globalConcurrency"]', '4');
    await page.fill('.flow-add input[name="keyConcurrency"]', '1');
    await page.fill('.flow-add input[name="rateLimit"]', '10');
    await page.fill('.flow-add input[name="rateLimitPeriod"]', '60');
    await page.click('.flow-add button[data-action="save-limits"]');
    // seed-f is a queue no workflow of this instance uses: the API refuses it (a typo guard) and the page asks first
    await page.locator('#confirm').waitFor({ state: 'visible' });
    expect(await page.locator('#confirm-text').textContent()).toContain('no workflow of this instance uses queue "seed-f"');
    await page.click('#confirm-yes');
    await page.waitForSelector('tr.flow-row[data-queue="seed-f"]');
    expect(errors.splice(0).filter((e) => !/^400 .*\/flow\/queues\/seed-f\/limits$/.test(e))).toEqual([]);
    expect(await client.flowControl.queueLimits()).toMatchObject([
      { queue: 'seed-f', globalConcurrency: 4, keyConcurrency: 1, rateLimit: { limit: 10, periodMs: 60_000 }, source: 'runtime' },
    ]);
    const row = await page.locator('tr.flow-row[data-queue="seed-f"]').textContent();
    expect(row).toContain('1 / 4');
    expect(row).toContain('0/10 per 60 s');
    expect(row).toContain('runtime');
    expect(await page.locator('#flow-debounced').textContent()).toMatch(/search\.reindex\s*doc-42\s*F-debounced/);
    expect(await page.locator('#flow-singletons').textContent()).toMatch(/accounts\.sync\s*account-9\s*F-single\s*WAITING/);

    await page.locator('tr.flow-row[data-queue="seed-f"]').click();
    await page.waitForSelector('tr[data-detail="seed-f"] .flow-keys');
    const keys = await page.locator('tr[data-detail="seed-f"] .flow-keys').textContent();
    expect(keys).toMatch(/t1\s*1 \/ 1\s*—\s*2/);

    await page.click('tr[data-run="F-wait-1"]');
    await page.waitForSelector('#run-blockers');
    expect(await page.locator('#run-blockers').textContent()).toContain('Held back by flow control: concurrency key t1: 1/1');
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-flow.png'), fullPage: false });

    await page.locator('tr.flow-row[data-queue="seed-f"] button[data-action="reset"]').click();
    await eventually(async () => (await client.flowControl.queueLimits()).length === 0, 10_000, 'the limits reset');
    await page.waitForSelector('#flow-body .empty');
    expect(errors).toEqual([]);
  }, 60_000);
});
