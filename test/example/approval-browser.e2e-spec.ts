import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { WorkflowClient } from 'nestjs-durable';
import type pw from 'playwright-core';
import request from 'supertest';
import { ARTIFACTS, launchChromium } from '../admin/support/browser.js';
import { describeBrowser } from '../support/chromium.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { shippedOrder, startExampleApp } from './support/example-app.js';

/**
 * An operator approves a refund from the dashboard: the Signals panel lists the return waiting for
 * refund.approval, the form POSTs to the signal's own endpoint with the dashboard's token (the
 * example's RefundApproverGuard accepts the admin token), a bad decision shows the endpoint's 400,
 * a good one lets the run go on to its refund.
 */
describeBrowser('example shop in Chromium: a refund approved from the dashboard', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let base: string;
  let browser: pw.Browser;
  beforeAll(async () => {
    db = await createTestDatabase('example_approval_browser');
    app = await startExampleApp(db.url);
    await app.listen(0, '127.0.0.1');
    base = (await app.getUrl()).replace('[::1]', '127.0.0.1');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await db?.drop();
  });

  it('lists the waiting return, refuses a bad decision with its 400, and sends a good one', async () => {
    const api = () => request(app.getHttpServer());
    const client = app.get(WorkflowClient);
    const orderId = (await shippedOrder(app, 'grinder')).id;
    const { runId } = (await api().post(`/orders/${orderId}/return`).send({ reason: 'broken' }).expect(202)).body as { runId: string };
    await eventually(async () => (await client.getRun(runId))?.status === 'WAITING', 20_000, 'the return waiting for approval');

    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.addInitScript("sessionStorage.setItem('nestjs-durable.token', 'test-admin-token')");
    await page.goto(`${base}/durable/`);
    await page.click('#signals > summary');
    const row = page.locator(`#signals-table tr[data-run="${runId}"]`);
    await row.waitFor();
    expect(await row.getAttribute('data-signal')).toBe('refund.approval');
    await page.screenshot({ path: join(ARTIFACTS, 'example-signals-panel.png') });

    await row.locator('textarea').fill('{"approved": "yes"}');
    await row.locator('[data-action="send-signal"]').click();
    await page.locator('.toast.error', { hasText: '400' }).waitFor();
    expect(await page.locator('.toast.error').first().innerText()).toContain('approved must be a boolean value');
    expect((await client.getRun(runId))?.status).toBe('WAITING');

    await row.locator('textarea').fill('{"approved": true, "note": "approved from the dashboard"}');
    await row.locator('[data-action="send-signal"]').click();
    await page.locator('.toast', { hasText: `Sent refund.approval to ${runId}` }).waitFor();
    // The run went on: its refund is with the provider, waiting for the confirmation.
    await eventually(
      async () => (await client.getRun(runId))?.steps.some((s) => s.name === 'requestRefund' && s.status === 'SUCCEEDED'),
      20_000,
      'the refund handed to the provider',
    );
    await page.locator(`#signals-table tr[data-run="${runId}"]`).waitFor({ state: 'detached' });
    await page.close();
  });
});
