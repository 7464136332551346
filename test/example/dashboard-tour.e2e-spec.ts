import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { WorkflowClient } from 'nestjs-durable';
import pw from 'playwright-core';
import request from 'supertest';
import { ARTIFACTS, launchChromium, rects } from '../admin/support/browser.js';
import { describeBrowser } from '../support/chromium.js';
import { eventually } from '../support/engine-harness.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { shipmentHeaders, startExampleApp } from './support/example-app.js';

/**
 * The example shop's dashboard as a new user sees it, in a real Chromium at 1440 and 800 px: what an
 * order waits for in the list, a declined payment's outcome, a review-request sleep shown as waiting
 * until its wake time, step bars that do not overlap, the run pane below the header while scrolling.
 */

describeBrowser('example shop: the dashboard at 1440 and 800 px (Chromium)', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let browser: pw.Browser;
  let url: string;
  const order = async (email: string) =>
    (await request(app.getHttpServer()).post('/orders').send({ customer: 'Ada', email, sku: 'mug', quantity: 1 }).expect(201)).body
      .id as string;

  beforeAll(async () => {
    db = await createTestDatabase('example_tour');
    app = await startExampleApp(db.url, { env: { REVIEW_REQUEST_DELAY_MS: '180000' } });
    await app.listen(0, '127.0.0.1');
    url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await db?.drop();
  });

  it('tells waits, outcomes and sleeps truthfully, with bars that do not overlap, at both widths', async () => {
    const client = app.get(WorkflowClient);
    const declined = await order('decline@example.com');
    const waiting = await order('bob@example.com');
    const shipped = await order('ada@example.com');
    await eventually(async () => (await client.getRun(declined))?.status === 'SUCCEEDED', 30_000, 'the declined order to end');
    await eventually(async () => (await client.getRun(shipped))?.status === 'WAITING', 30_000, 'the order to wait for its shipment');
    await request(app.getHttpServer())
      .post(`/orders/${shipped}/shipment`)
      .set(shipmentHeaders(shipped, { trackingNumber: 'TRK-1' }))
      .send(JSON.stringify({ trackingNumber: 'TRK-1' }))
      .expect(202);
    await eventually(
      async () => !!(await client.getRun(shipped))?.steps.some((s) => s.name === 'durable.sleep'),
      30_000,
      'the review-request sleep to start',
    );
    await eventually(async () => (await client.getRun(waiting))?.status === 'WAITING', 30_000, 'the other order to wait');

    for (const width of [1440, 800]) {
      const page = await browser.newPage({ viewport: { width, height: 900 } });
      await page.addInitScript("sessionStorage.setItem('nestjs-durable.token', 'test-admin-token')");
      await page.goto(`${url}/durable/`);
      // The list: a declined payment shows its outcome, a waiting order what it waits for.
      await page.locator(`tr[data-run="${declined}"] [data-output]`).waitFor();
      expect(await page.locator(`tr[data-run="${declined}"] [data-output]`).innerText()).toContain('PAYMENT_FAILED');
      expect(await page.locator(`tr[data-run="${waiting}"] [data-waits]`).innerText()).toBe('waits for message shipment');
      // ... in the colour of its WAITING badge, not in the red of an error
      const colour = (sel: string, prop: 'color' | 'backgroundColor') =>
        page
          .locator(sel)
          .evaluate(
            (e, p) => (globalThis as unknown as { getComputedStyle(e: unknown): Record<string, string> }).getComputedStyle(e)[p],
            prop,
          );
      expect(await colour(`tr[data-run="${waiting}"] [data-waits]`, 'color')).toBe(
        await colour(`tr[data-run="${waiting}"] .badge.WAITING`, 'backgroundColor'),
      );
      await page.screenshot({ path: join(ARTIFACTS, `example-${width}-list.png`) });

      // The shipped order sleeps before asking for a review: WAITING until its wake time, not SUCCEEDED in 0 ms.
      await page.click(`tr[data-run="${shipped}"] td.id`);
      const sleepRow = page.locator('#steps tr.step', { hasText: 'durable.sleep' });
      await sleepRow.waitFor();
      expect(await sleepRow.locator('[data-status]').getAttribute('data-status')).toBe('WAITING');
      expect(await sleepRow.innerText()).toMatch(/sleeps until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
      expect(await sleepRow.locator('.bar.planned').count()).toBe(1);
      // Consecutive steps before it ran one after another: no bar starts inside the previous one (a bar is at least 2 px wide).
      const bars = await page
        .locator('#steps tr.step .bar:not(.planned)')
        .evaluateAll((els) => els.map((e) => ({ left: e.getBoundingClientRect().left, right: e.getBoundingClientRect().right })));
      for (let i = 1; i < bars.length; i++) expect(bars[i].left).toBeGreaterThanOrEqual(bars[i - 1].right - 3);
      // The duration column stays in view inside the pane.
      const seq = await sleepRow.getAttribute('data-seq');
      const [pane, duration] = await rects(page, ['#detail-view', `#steps tr.step[data-seq="${seq}"] .dur`]);
      expect(duration.x + duration.width).toBeLessThanOrEqual(pane.x + pane.width + 1);
      await page.screenshot({ path: join(ARTIFACTS, `example-${width}-sleeping.png`) });

      // Scrolled down, the run's header is not under the page header.
      await page.mouse.wheel(0, 1500);
      await page.waitForTimeout(300);
      const [header, head] = await rects(page, ['header.top, .top', '.detail-head']);
      const sticky = await page
        .locator('.top')
        .first()
        .evaluate(
          (e) =>
            (globalThis as unknown as { getComputedStyle(e: unknown): { position: string } }).getComputedStyle(e).position === 'sticky',
        );
      if (sticky) expect(head.y).toBeGreaterThanOrEqual(header.y + header.height - 1);
      await page.screenshot({ path: join(ARTIFACTS, `example-${width}-scrolled.png`) });
      await page.close();
    }
  }, 180_000);
});
