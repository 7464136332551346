import { WorkflowClient } from 'nestjs-durable';
import type pw from 'playwright-core';
import { launchChromium } from '../admin/support/browser.js';
import { describeBrowser } from '../support/chromium.js';
import { startReplicaApp, type ReplicaApp } from './replica-app.js';

/** The dashboard of an admin API with a read replica, in headless Chromium: its header shows the replica's lag. */
describeBrowser('dashboard on a read replica, in headless Chromium', () => {
  let r: ReplicaApp;
  let browser: pw.Browser;

  beforeAll(async () => {
    r = await startReplicaApp();
    await r.app.listen(0, '127.0.0.1');
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await r?.close();
  });

  it('shows the replica lag next to the counters, and the runs read from the replica', async () => {
    await r.app.get(WorkflowClient).start('replica.one', null, { id: 'dash-rr' });
    const url = (await r.app.getUrl()).replace('[::1]', '127.0.0.1');
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.goto(`${url}/durable/`);
    const lag = page.locator('[data-stat="Replica lag"]');
    await lag.waitFor({ timeout: 15_000 });
    expect(await lag.innerText()).toMatch(/^\s*[\d.]+ (ms|s)\s+Replica lag\s*$/i);
    expect(await lag.getAttribute('title')).toContain('read replica');
    await page.getByText('dash-rr').first().waitFor({ timeout: 15_000 });
  }, 60_000);
});
