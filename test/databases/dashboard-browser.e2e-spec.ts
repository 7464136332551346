import { Injectable, type INestApplication } from '@nestjs/common';
import { Durable, NonRetryableError, Workflow, WorkflowClient } from 'nestjs-durable';
import type pw from 'playwright-core';
import { launchChromium } from '../admin/support/browser.js';
import { describeBrowser } from '../support/chromium.js';
import { durableApp, type KindDatabase, MARIADB_AVAILABLE, openDatabase } from '../support/databases.js';
import { eventually } from '../support/engine-harness.js';

@Injectable()
class Orders {
  @Workflow({ name: 'order.ship' })
  async ship(input: { sku: string }) {
    await Durable.step('reserve', async () => input.sku);
    if (input.sku === 'broken') {
      await Durable.step('charge', async () => {
        throw new NonRetryableError('card declined');
      });
    }
    return Durable.recv<string>('tracking', { timeoutMs: 600_000 });
  }
}

/**
 * The dashboard of an app on MariaDB, in headless Chromium: the runs list with its counters, a
 * failed run's steps and error, and a waiting run cancelled from the run page — the admin API's
 * MariaDB statements behind the page an operator uses.
 */
(MARIADB_AVAILABLE ? describeBrowser : describe.skip)('the dashboard on MariaDB, in headless Chromium', () => {
  let db: KindDatabase;
  let app: INestApplication;
  let browser: pw.Browser;
  let page: pw.Page;
  let url: string;

  beforeAll(async () => {
    db = await openDatabase('mariadb', 'dashboard');
    app = await durableApp(db, [Orders], { admin: { unsafeNoGuard: true } });
    await app.listen(0, '127.0.0.1');
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    const client = app.get(WorkflowClient);
    await client.start('order.ship', { sku: 'grinder' }, { id: 'ship-waiting' });
    await client.start('order.ship', { sku: 'broken' }, { id: 'ship-failed' });
    await eventually(
      async () => (await client.getRun('ship-waiting'))?.status === 'WAITING' && (await client.getRun('ship-failed'))?.status === 'FAILED',
      15_000,
      'the seeded runs',
    );
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await db?.close();
  });

  it('lists the runs with the counters, opens a failed run with its steps and error', async () => {
    await page.goto(`${url}/durable/`);
    await page.locator('#runs-body tr[data-run="ship-failed"]').waitFor({ timeout: 15_000 });
    expect(await page.locator('#runs-body tr').count()).toBe(2);
    await page.locator('[data-stat="Waiting"]').waitFor();
    // How runs started elsewhere reach this instance on MariaDB: its poll, at the app's pollIntervalMs (100 ms)
    const wakeUps = page.locator('[data-stat="Wake-ups"]');
    expect(await wakeUps.innerText()).toMatch(/^\s*poll · 100 ms\s+Wake-ups\s*$/i);
    expect(await wakeUps.getAttribute('title')).toContain('no LISTEN/NOTIFY');
    await page.click('#runs-body tr[data-run="ship-failed"]');
    await page.locator('#steps tbody tr.step').first().waitFor();
    const rows = await page.locator('#steps tbody tr.step').allInnerTexts();
    expect(rows).toHaveLength(2);
    expect(rows[0]).toContain('reserve');
    expect(rows[1]).toContain('FAILED');
    expect(await page.locator('#run-error').innerText()).toContain('card declined');
  }, 60_000);

  it('cancels a waiting run from its page', async () => {
    await page.goto(`${url}/durable/`);
    await page.locator('#runs-body tr[data-run="ship-waiting"]').waitFor({ timeout: 15_000 });
    await page.click('#runs-body tr[data-run="ship-waiting"]');
    await page.locator('#run-status [data-status="WAITING"]').waitFor();
    await page.click('#btn-cancel');
    await page.locator('#confirm').waitFor({ state: 'visible' });
    await page.click('#confirm-yes');
    await page.locator('#run-status [data-status="CANCELLED"]').waitFor({ timeout: 10_000 });
    expect(await db.query("SELECT status FROM durable_runs WHERE id = 'ship-waiting'")).toEqual([{ status: 'CANCELLED' }]);
  }, 60_000);
});
