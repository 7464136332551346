import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DurableRuntime, WorkflowClient } from 'nestjs-durable';
import { replayRun, type RunExport } from 'nestjs-durable/testing';
import pw from 'playwright-core';
import { bearerGuard, createAdminApp, seedRuns, type AdminApp } from './support/admin-app.js';
import { eventually } from '../support/engine-harness.js';
import { ARTIFACTS, launchChromium } from './support/browser.js';
import { describeBrowser } from '../support/chromium.js';

/**
 * The dashboard in a real headless Chromium (Debian package `chromium`): open it behind a
 * bearer-token guard, filter to FAILED, open a run and see its steps, cancel a running run and
 * see its status change. Screenshots go to test-artifacts/.
 */

describeBrowser('admin dashboard in headless Chromium', () => {
  const TOKEN = 'browser-test-token';
  let a: AdminApp;
  let url: string;
  let browser: pw.Browser;
  let page: pw.Page;
  let failedId: string;
  let slowId: string;
  let sumId = '';

  beforeAll(async () => {
    a = await createAdminApp('dashboard', { admin: { guards: [bearerGuard(TOKEN)] }, engine: { leaseMs: 15_000, heartbeatMs: 1_000 } });
    await a.app.listen(0, '127.0.0.1');
    url = (await a.app.getUrl()).replace('[::1]', '127.0.0.1');
    // A few hundred runs in every status, spread over the last hours, with steps.
    await seedRuns(a.pool, { count: 360, steps: 3, spacingMs: 45_000, newestAgoMs: 5_000 });
    const client = a.app.get(WorkflowClient);
    for (let i = 0; i < 4; i++) sumId = (await client.start('admin.sum', { n: 4 })).id;
    await client.handle(sumId).result({ timeoutMs: 10_000 });
    const failed = await client.start('admin.fail', { reason: 'card declined' });
    failedId = failed.id;
    await failed.result({ timeoutMs: 10_000 }).catch(() => undefined);
    slowId = (await client.start('admin.slow', { steps: 400, ms: 100 })).id;
    await eventually(
      async () => (await a.pool.query(`SELECT count(*)::int AS n FROM durable_steps WHERE run_id = $1`, [slowId])).rows[0].n >= 3,
      10_000,
      'slow run to make progress',
    );
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1500, height: 950 } });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await a?.close();
  });

  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `dashboard-${name}.png`), fullPage: false });

  it('asks for a token when the guard says 401/403, then lists runs with the stats header', async () => {
    await page.goto(`${url}/durable`);
    expect(new URL(page.url()).pathname).toBe('/durable/');
    await page.locator('#auth-banner').waitFor({ state: 'visible' });
    await shot('1-token');
    await page.fill('#token-input', TOKEN);
    await page.click('#token-form button[type=submit]');
    await page.locator('#runs-body tr').first().waitFor();
    expect(await page.locator('#runs-body tr').count()).toBe(50);
    await expect(page.locator('#auth-banner').isHidden()).resolves.toBe(true);
    await page.locator('[data-stat="Pending"]').waitFor();
    expect(await page.locator('#stats .stat').count()).toBeGreaterThanOrEqual(6);
    expect(await page.evaluate("sessionStorage.getItem('nestjs-durable.token')")).toBe(TOKEN);
    await shot('2-list');
  });

  it('filters to FAILED', async () => {
    await page.click('[data-chip="FAILED"]');
    await eventually(
      async () => {
        const statuses = await page
          .locator('#runs-body tr [data-status]')
          .evaluateAll((els) => els.map((e) => e.getAttribute('data-status')));
        return statuses.length > 0 && statuses.every((s) => s === 'FAILED');
      },
      10_000,
      'only FAILED rows',
    );
    expect(page.url()).toContain('status=FAILED');
    await shot('3-failed');
  });

  it('says, for a workflow whose runs are not kept, that its succeeded runs are deleted', async () => {
    await page.locator('#f-workflow option[value="admin.ping"]').waitFor({ state: 'attached' });
    expect(await page.locator('#f-workflow option[value="admin.ping"]').textContent()).toBe('admin.ping (succeeded runs not kept)');
    await page.selectOption('#f-workflow', 'admin.ping');
    await page.locator('#runs-not-kept').waitFor({ state: 'visible' });
    expect(await page.locator('#runs-not-kept').textContent()).toContain('Runs of admin.ping that succeed are deleted at their end');
    await page.selectOption('#f-workflow', '');
    await page.locator('#runs-not-kept').waitFor({ state: 'hidden' });
    expect(page.url()).toContain('status=FAILED');
  });

  it('opens a failed run and shows its step timeline with durations and the error', async () => {
    await page.fill('#f-id', failedId.slice(0, 8));
    await page.locator(`#runs-body tr[data-run="${failedId}"]`).waitFor();
    await page.click(`#runs-body tr[data-run="${failedId}"]`);
    await page.locator('#steps tbody tr.step').first().waitFor();
    const rows = await page.locator('#steps tbody tr.step').allInnerTexts();
    expect(rows).toHaveLength(2);
    expect(rows[0]).toContain('add');
    expect(rows[1]).toContain('explode');
    expect(rows[1]).toContain('FAILED');
    expect(rows[0]).toMatch(/\d+(\.\d+)? (ms|s)/);
    expect(await page.locator('#run-error').innerText()).toContain('card declined');
    await page.click('#steps tbody tr.step[data-seq="0"]');
    await page.locator('#steps .json').first().waitFor();
    await shot('4-run-detail');
  });

  it('cancels a running run after confirmation and shows the new status', async () => {
    await page.fill('#f-id', slowId.slice(0, 8));
    await page.click('[data-chip="RUNNING"]');
    await page.locator(`#runs-body tr[data-run="${slowId}"]`).waitFor({ timeout: 20_000 });
    await page.click(`#runs-body tr[data-run="${slowId}"]`);
    await page.locator('#run-status [data-status="RUNNING"]').waitFor();
    await shot('5-running');
    await page.click('#btn-cancel');
    await page.locator('#confirm').waitFor({ state: 'visible' });
    await shot('6-confirm');
    await page.click('#confirm-yes');
    await page.locator('#run-status [data-status="CANCELLED"]').waitFor({ timeout: 10_000 });
    const { rows } = await a.pool.query(`SELECT status FROM durable_runs WHERE id = $1`, [slowId]);
    expect(rows[0].status).toBe('CANCELLED');
    await shot('7-cancelled');
  });

  it('shows the live progress of a long step, then cancels with compensation and shows the undo steps', async () => {
    const client = a.app.get(WorkflowClient);
    const sagaId = (await client.start('admin.saga', { items: ['a', 'b'], total: 400, ms: 50 })).id;
    await page.click('[data-chip="ALL"]');
    await page.fill('#f-id', sagaId.slice(0, 8));
    await page.locator(`#runs-body tr[data-run="${sagaId}"]`).waitFor({ timeout: 10_000 });
    await page.click(`#runs-body tr[data-run="${sagaId}"]`);
    await page.locator('#live-progress .progress-row[data-seq="2"]').waitFor({ timeout: 10_000 });
    const first = await page.locator('#live-progress .progress-text').innerText();
    expect(first).toMatch(/\d+ \/ 400 · \d+ % · chunk \d+/);
    // Live: the value moves without a click (the open run refreshes every 1.5 s).
    await eventually(async () => (await page.locator('#live-progress .progress-text').innerText()) !== first, 10_000, 'progress to move');
    expect(await page.locator('#steps .step-note[data-compensation="unreserve"]').count()).toBe(2);
    await shot('10-progress');
    await page.click('#btn-cancel');
    await page.locator('#confirm').waitFor({ state: 'visible' });
    expect(await page.isChecked('#confirm-compensate')).toBe(true);
    await shot('11-cancel-compensate');
    await page.click('#confirm-yes');
    await page.locator('#run-status [data-status="CANCELLED"]').waitFor({ timeout: 15_000 });
    await page.locator('#steps tr.compensation').nth(1).waitFor();
    const undo = await page.locator('#steps tr.compensation').allInnerTexts();
    expect(undo[0]).toContain('compensate:reserve');
    expect(undo[0]).toContain('undoes #1');
    expect(undo[1]).toContain('undoes #0');
    await page.click('[data-tab="history"]');
    const history = await page.locator('#tab-body').innerText();
    for (const kind of ['cancel_requested', 'compensating', 'compensated', 'cancelled']) expect(history).toContain(kind);
    await shot('12-compensated');
    await page.click('[data-tab="steps"]');
    await page.locator('#steps tr.compensation').first().waitFor();
    await shot('13-compensated-steps');
  });

  it("shows a run's groups of children with their counters on its Children tab", async () => {
    const client = a.app.get(WorkflowClient);
    const fan = await client.start('admin.fanout', { n: 30 });
    await fan.result({ timeoutMs: 30_000 });
    await page.click('[data-chip="ALL"]');
    await page.fill('#f-id', fan.id.slice(0, 8));
    await page.locator(`#runs-body tr[data-run="${fan.id}"]`).waitFor();
    await page.click(`#runs-body tr[data-run="${fan.id}"]`);
    await page.locator('#run-status [data-status="SUCCEEDED"]').waitFor();
    await page.click('[data-tab="children"]');
    const row = page.locator('#tab-body .groups tr[data-group="0"]');
    await row.waitFor();
    const text = await row.innerText();
    expect(text).toContain('admin.sum');
    expect(text).toContain('30 of 30');
    expect(text).toContain('30 (100 %)');
    await shot('14-groups');
  });

  it('forks a succeeded run from a chosen step and opens the new run', async () => {
    await page.click('[data-chip="ALL"]');
    await page.fill('#f-id', sumId.slice(0, 8));
    await page.locator(`#runs-body tr[data-run="${sumId}"]`).waitFor();
    await page.click(`#runs-body tr[data-run="${sumId}"]`);
    await page.locator('#run-status [data-status="SUCCEEDED"]').waitFor();
    await page.click('[data-tab="input"]');
    await page.locator('#tab-body .json').waitFor();
    expect(await page.locator('#tab-body .json').innerText()).toContain('"n"');
    await page.click('#btn-fork');
    await page.locator('#confirm').waitFor({ state: 'visible' });
    expect(await page.inputValue('#confirm-step')).toBe('4');
    await page.fill('#confirm-step', '2');
    await shot('8-fork');
    await page.click('#confirm-yes');
    await eventually(
      async () => {
        const id = await page.locator('#run-id').innerText();
        return id !== sumId && (await page.locator('#run-status [data-status="SUCCEEDED"]').count()) === 1;
      },
      15_000,
      'forked run to open and succeed',
    );
    const forkId = await page.locator('#run-id').innerText();
    const { rows } = await a.pool.query(`SELECT seq, finished_at FROM durable_steps WHERE run_id = ANY($1) ORDER BY run_id = $2, seq`, [
      [sumId, forkId],
      forkId,
    ]);
    expect(rows).toHaveLength(8);
    expect(rows[4].finished_at).toEqual(rows[0].finished_at);
    expect(rows[6].finished_at).not.toEqual(rows[2].finished_at);
    await page.click('[data-tab="history"]');
    expect(await page.locator('#tab-body').innerText()).toContain('forked');
    await page.click('#groups summary');
    await page.locator('#groups-body table').waitFor();
    await shot('9-forked-and-groups');
  });

  it('"Export JSON" downloads the open run as recorded, which replayRun accepts', async () => {
    await page.fill('#f-id', sumId.slice(0, 8));
    await page.locator(`#runs-body tr[data-run="${sumId}"]`).waitFor();
    await page.click(`#runs-body tr[data-run="${sumId}"]`);
    await page.locator('#run-status [data-status="SUCCEEDED"]').waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#btn-export')]);
    expect(download.suggestedFilename()).toBe(`run-${sumId}.json`);
    const recording = JSON.parse(readFileSync((await download.path())!, 'utf8')) as RunExport;
    expect(recording).toMatchObject({ format: 'nestjs-durable.run/1', run: { id: sumId, workflowName: 'admin.sum', status: 'SUCCEEDED' } });
    expect(recording.steps).toHaveLength(4);
    await expect(replayRun(recording, { engine: a.app.get(DurableRuntime).engine })).resolves.toMatchObject({
      outcome: 'returned',
      replayed: 4,
    });
  });
});
