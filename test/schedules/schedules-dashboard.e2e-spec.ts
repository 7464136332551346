import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { WorkflowClient } from 'nestjs-durable';
import pw from 'playwright-core';
import { createAdminApp, type AdminApp } from '../admin/support/admin-app.js';
import { eventually } from '../support/engine-harness.js';
import { launchChromium } from '../admin/support/browser.js';
import { describeBrowser } from '../support/chromium.js';

/**
 * The dashboard's schedules panel in headless Chromium: schedules with next and last fire and
 * policy; pause, resume and "Run now" from the page; a schedule's latest runs. Screenshot in test-artifacts/.
 */
const ARTIFACTS = join(process.cwd(), 'test-artifacts');

describeBrowser('schedules panel of the dashboard in headless Chromium', () => {
  let a: AdminApp;
  let browser: pw.Browser;
  let page: pw.Page;
  let client: WorkflowClient;

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    a = await createAdminApp('sched_dashboard');
    await a.app.listen(0, '127.0.0.1');
    client = a.app.get(WorkflowClient);
    await client.schedules.create({
      id: 'report:acme',
      workflow: 'admin.sum',
      cron: '0 0 6 * * *',
      timeZone: 'Europe/Berlin',
      input: { n: 2 },
      overlap: 'bufferOne',
    });
    await client.schedules.create({
      id: 'report:globex',
      workflow: 'admin.sum',
      cron: '@hourly',
      catchUp: 'all',
      catchUpWindowMs: 3_600_000,
      jitterMs: 500,
    });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1500, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('response', (r) => r.status() >= 400 && !r.url().endsWith('/favicon.ico') && errors.push(`${r.status()} ${r.url()}`));
    (page as unknown as { errors: string[] }).errors = errors;
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await a?.close();
  });

  it('lists schedules; pause, resume and run now from the page; shows the latest runs', async () => {
    const url = (await a.app.getUrl()).replace('[::1]', '127.0.0.1');
    await page.goto(`${url}/durable/`);
    await page.click('#schedules summary');
    await page.waitForSelector('tr[data-schedule="report:acme"]');
    const row = page.locator('tr[data-schedule="report:acme"]');
    expect(await row.textContent()).toContain('0 0 6 * * *');
    expect(await row.textContent()).toContain('Europe/Berlin');
    expect(await row.textContent()).toContain('overlap: bufferOne');
    expect(await page.locator('tr[data-schedule="report:globex"]').textContent()).toContain('jitter 500 ms');

    await row.locator('button[data-action="pause"]').click();
    await page.waitForSelector('tr[data-schedule="report:acme"] [data-paused="true"]');
    expect((await client.schedules.get('report:acme'))!.paused).toBe(true);
    await page.locator('tr[data-schedule="report:acme"] button[data-action="resume"]').click();
    await page.waitForSelector('tr[data-schedule="report:acme"] button[data-action="pause"]');
    expect((await client.schedules.get('report:acme'))!.paused).toBe(false);

    await page.locator('tr[data-schedule="report:acme"] button[data-action="trigger"]').click();
    await page.locator('#confirm').waitFor({ state: 'visible' }); // "Run now" asks first
    await page.click('#confirm-yes');
    await eventually(async () => (await client.schedules.get('report:acme'))!.lastRunStatus === 'SUCCEEDED', 10_000, 'the triggered run');
    await page.locator('tr[data-schedule="report:acme"]').click();
    await page.waitForSelector('tr[data-detail="report:acme"] .badge[data-status="SUCCEEDED"]', { timeout: 10_000 });
    const detail = await page.locator('tr[data-detail="report:acme"]').textContent();
    expect(detail).toContain('Next slots');
    expect(detail).toMatch(/sched:report:acme:.*:manual/);
    await page.screenshot({ path: join(ARTIFACTS, 'dashboard-schedules.png'), fullPage: false });
    expect((page as unknown as { errors: string[] }).errors).toEqual([]);
  }, 60_000);

  it('creates, changes and deletes a runtime schedule from the page; a refused cron shows in the form', async () => {
    const url = (await a.app.getUrl()).replace('[::1]', '127.0.0.1');
    await page.goto(`${url}/durable/`);
    await page.click('#schedules summary');
    await page.click('button[data-action="new-schedule"]');
    await page.locator('#schedule-editor').waitFor({ state: 'visible' });
    await page.fill('#sched-id', 'report:initech');
    await page.fill('#sched-workflow', 'admin.sum');
    await page.fill('#sched-cron', 'not a cron');
    await page.fill('#sched-input', '{"n": 5}');
    await page.click('#schedule-editor-save');
    await page.locator('#schedule-editor-error').waitFor({ state: 'visible' });
    expect(await page.locator('#schedule-editor-error').textContent()).toMatch(/cron/i);
    expect(await client.schedules.get('report:initech')).toBeNull();

    await page.fill('#sched-cron', '0 30 7 * * *');
    await page.click('#schedule-editor-save');
    await page.waitForSelector('tr[data-schedule="report:initech"]');
    expect(await client.schedules.get('report:initech')).toMatchObject({
      workflowName: 'admin.sum',
      cron: '0 30 7 * * *',
      input: { n: 5 },
    });

    await page.waitForSelector('tr[data-detail="report:initech"] button[data-action="edit-schedule"]');
    await page.click('tr[data-detail="report:initech"] button[data-action="edit-schedule"]');
    await page.locator('#schedule-editor').waitFor({ state: 'visible' });
    expect(await page.inputValue('#sched-cron')).toBe('0 30 7 * * *');
    await page.fill('#sched-cron', '0 45 7 * * *');
    await page.click('#schedule-editor-save');
    await eventually(async () => (await client.schedules.get('report:initech'))?.cron === '0 45 7 * * *', 10_000, 'the changed cron');

    await page.waitForSelector('tr[data-detail="report:initech"] button[data-action="delete-schedule"]');
    await page.click('tr[data-detail="report:initech"] button[data-action="delete-schedule"]');
    await page.locator('#confirm').waitFor({ state: 'visible' });
    await page.click('#confirm-yes');
    await page.waitForSelector('tr[data-schedule="report:initech"]', { state: 'detached' });
    expect(await client.schedules.get('report:initech')).toBeNull();
    const errors = (page as unknown as { errors: string[] }).errors.filter((e) => !e.startsWith('400 '));
    expect(errors).toEqual([]);
  }, 60_000);
});
