import { join } from 'node:path';
import { WorkflowClient } from 'nestjs-durable';
import pw from 'playwright-core';
import { createAdminApp, seedRuns, type AdminApp } from './support/admin-app.js';
import { eventually } from '../support/engine-harness.js';
import { ARTIFACTS, CHROMIUM, haveChromium, launchChromium } from './support/browser.js';

/**
 * Operations in the dashboard, in a real headless Chromium: search by tag, bulk cancel of every run
 * the filter matches (dry run, confirmation, batches), live updates arriving without a reload, and
 * the layout at 1440 and 800 px wide. Screenshots go to test-artifacts/.
 */
if (!haveChromium) console.log(`SKIPPED dashboard operations browser test: ${CHROMIUM} is absent (apt-get install -y chromium)`);
const describeBrowser = haveChromium ? describe : describe.skip;

describeBrowser('dashboard operations in headless Chromium', () => {
  let a: AdminApp;
  let url: string;
  let browser: pw.Browser;
  let page: pw.Page;
  let client: WorkflowClient;
  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `operations-${name}.png`), fullPage: false });

  beforeAll(async () => {
    a = await createAdminApp('dash_ops', { engine: { leaseMs: 15_000, heartbeatMs: 1_000 } });
    await a.app.listen(0, '127.0.0.1');
    url = (await a.app.getUrl()).replace('[::1]', '127.0.0.1');
    client = a.app.get(WorkflowClient);
    await seedRuns(a.pool, { count: 120, steps: 2, spacingMs: 30_000, newestAgoMs: 5_000 });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await a?.close();
  });

  it('cancels every run matching a tag filter in bulk, after a dry run and a confirmation', async () => {
    // 130 slow runs with the tag (more than one page and more than one batch of 100), and 3 without it.
    const tagged: string[] = [];
    for (let i = 0; i < 130; i++) tagged.push((await client.start('admin.slow', { steps: 400, ms: 200 }, { tags: ['ops:bulk'] })).id);
    const untagged: string[] = [];
    for (let i = 0; i < 3; i++) untagged.push((await client.start('admin.slow', { steps: 400, ms: 200 })).id);

    await page.goto(`${url}/durable/#tag=ops:bulk`);
    await page.locator('#runs-body tr').first().waitFor();
    expect(await page.inputValue('#f-tag')).toBe('ops:bulk');
    await eventually(async () => (await page.locator('#runs-body tr').count()) === 50, 10_000, 'a full page of tagged runs');
    await page.click('#select-page');
    await page.locator('#bulk-bar').waitFor({ state: 'visible' });
    expect(await page.locator('#bulk-scope').innerText()).toContain('50 selected');
    await page.click('#select-all-matching');
    expect(await page.locator('#bulk-scope').innerText()).toContain('All 130 runs matching this filter');
    await shot('1440-bulk-selected');
    await page.click('[data-bulk="cancel"]');
    await page.locator('#bulk-confirm').waitFor({ state: 'visible' });
    expect(await page.locator('#bulk-title').innerText()).toBe('Cancel 130 run(s)?');
    await shot('1440-bulk-confirm');
    await page.click('#bulk-yes');
    await page.locator('#bulk-confirm').waitFor({ state: 'hidden', timeout: 30_000 });
    await page.locator('.toast', { hasText: '130 run(s) done' }).waitFor();
    const { rows } = await a.pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM durable_runs WHERE id = ANY($1) GROUP BY status`,
      [tagged],
    );
    expect(rows).toEqual([{ status: 'CANCELLED', n: 130 }]);
    const rest = await a.pool.query<{ status: string }>(`SELECT status FROM durable_runs WHERE id = ANY($1)`, [untagged]);
    expect(rest.rows.every((r) => r.status !== 'CANCELLED')).toBe(true);
    await eventually(
      async () =>
        await page
          .locator('#runs-body [data-status]')
          .evaluateAll((els) => els.every((e) => e.getAttribute('data-status') === 'CANCELLED')),
      10_000,
      'the list to show them cancelled',
    );
    await shot('1440-bulk-done');
    await client.bulk('cancel', { ids: untagged });
  });
});
