import { join } from 'node:path';
import { WorkflowClient } from 'nestjs-durable';
import pw from 'playwright-core';
import { createAdminApp, seedRuns, type AdminApp } from './support/admin-app.js';
import { eventually } from '../support/engine-harness.js';
import { ARTIFACTS, launchChromium, rects } from './support/browser.js';
import { describeBrowser } from '../support/chromium.js';

/**
 * Operations in the dashboard, in a real headless Chromium: search by tag, bulk cancel of every run
 * the filter matches (dry run, confirmation, batches), live updates arriving without a reload, and
 * the layout at 1440 and 800 px wide. Screenshots go to test-artifacts/.
 */

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
    // 110 slow runs with the tag (more than one page and more than one batch of 100), and 3 without it.
    const tagged: string[] = [];
    for (let i = 0; i < 110; i++) tagged.push((await client.start('admin.slow', { steps: 400, ms: 200 }, { tags: ['ops:bulk'] })).id);
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
    expect(await page.locator('#bulk-scope').innerText()).toContain('All 110 runs matching this filter');
    await shot('1440-bulk-selected');
    await page.click('[data-bulk="cancel"]');
    await page.locator('#bulk-confirm').waitFor({ state: 'visible' });
    expect(await page.locator('#bulk-title').innerText()).toBe('Cancel 110 run(s)?');
    await shot('1440-bulk-confirm');
    await page.click('#bulk-yes');
    await page.locator('#bulk-confirm').waitFor({ state: 'hidden', timeout: 30_000 });
    await page.locator('.toast', { hasText: '110 run(s) done' }).waitFor();
    const { rows } = await a.pool.query<{ status: string; n: number }>(
      `SELECT status, count(*)::int AS n FROM durable_runs WHERE id = ANY($1) GROUP BY status`,
      [tagged],
    );
    expect(rows).toEqual([{ status: 'CANCELLED', n: 110 }]);
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

  it('streams updates: a run started elsewhere appears in the list and the stats without a reload or a poll', async () => {
    await page.goto(`${url}/durable/#tag=ops:live`);
    await page.locator('#live-mode[data-live="sse"]').waitFor({ timeout: 10_000 });
    await page.locator('#runs-empty').waitFor({ state: 'visible' });
    const listGets: number[] = [];
    const statsGets: number[] = [];
    page.on('request', (r) => {
      if (/\/durable\/runs\?/.test(r.url())) listGets.push(Date.now());
      if (/\/durable\/stats(\?|$)/.test(r.url())) statsGets.push(Date.now());
    });
    const since = Date.now();
    const started = await client.start('admin.slow', { steps: 400, ms: 200 }, { tags: ['ops:live'], delayMs: 3_600_000 });
    await page.locator(`#runs-body tr[data-run="${started.id}"]`).waitFor({ timeout: 10_000 });
    console.log(`dashboard: a run started elsewhere appeared in the list after ${Date.now() - since} ms (streamed)`);
    // The stream said something changed and the list reloaded for it (the page never polls while it streams: below).
    expect(listGets.length).toBeGreaterThanOrEqual(1);
    expect(await page.locator('#live-mode').getAttribute('data-live')).toBe('sse');
    const pendingNow = async () =>
      (await a.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM durable_runs WHERE status = 'PENDING'`)).rows[0].n;
    await eventually(
      async () => Number((await page.locator('[data-stat="Pending"] b').innerText()).replace(/\D/g, '')) === (await pendingNow()),
      10_000,
      'the stats header to count the new run',
    );
    // No polling while it streams: the 5-second refresh would GET stats (the stream carries them instead).
    await new Promise((r) => setTimeout(r, 6_000));
    expect(statsGets).toEqual([]);
    // The open run's detail follows the stream too: cancelled elsewhere, its pane says so without a reload.
    await page.click(`#runs-body tr[data-run="${started.id}"] td.id`);
    await page.locator('#run-status [data-status="PENDING"]').waitFor();
    // A PENDING run says what it waits for: here its start delay (an hour).
    expect(await page.locator('#run-waiting[data-waiting="delay"]').innerText()).toMatch(
      /^Not before .+: a start delay or a retry back-off\.$/,
    );
    await page.locator(`#live-mode[data-live="sse"]`).waitFor();
    const detailGets: number[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith(`/durable/runs/${started.id}`)) detailGets.push(Date.now());
    });
    await client.cancel(started.id);
    await page.locator('#run-status [data-status="CANCELLED"]').waitFor({ timeout: 10_000 });
    expect(detailGets.length).toBeGreaterThanOrEqual(1); // reloaded because the stream named the run
    expect(await page.locator('#live-mode').getAttribute('data-live')).toBe('sse');
    await page.locator(`#runs-body tr[data-run="${started.id}"] [data-status="CANCELLED"]`).waitFor({ timeout: 10_000 });
  });

  it('falls back to polling when a proxy buffers the stream, and still shows a run started elsewhere', async () => {
    const polling = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    // A proxy that buffers the response: the stream's request is held and not one byte of it arrives.
    await polling.route('**/durable/live**', () => undefined);
    try {
      await polling.goto(`${url}/durable/#tag=ops:poll`);
      await polling.locator('#runs-empty').waitFor({ state: 'visible' });
      await polling.locator('#live-mode[data-live="poll"]').waitFor({ timeout: 10_000 });
      expect(await polling.locator('#live-mode').innerText()).toBe('polling');
      const since = Date.now();
      const started = await client.start('admin.slow', { steps: 400, ms: 200 }, { tags: ['ops:poll'], delayMs: 3_600_000 });
      await polling.locator(`#runs-body tr[data-run="${started.id}"]`).waitFor({ timeout: 15_000 });
      console.log(`dashboard: with the stream buffered, a run started elsewhere appeared after ${Date.now() - since} ms (polled)`);
      await client.cancel(started.id);
      await polling.locator(`#runs-body tr[data-run="${started.id}"] [data-status="CANCELLED"]`).waitFor({ timeout: 15_000 });
    } finally {
      await polling.close();
    }
  });

  it('shows what a run waits for, a step error with its stack as lines, a result summary, and warns before a fork', async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    // A run suspended in Durable.recv('approval') without timeout, as the engine records it (waits.ts).
    await a.pool.query(
      `INSERT INTO durable_runs (id, workflow_name, queue, status, input, available_at) VALUES ('W-1', 'admin.sum', 'seed-a', 'WAITING', '{}', now() + interval '1 hour')`,
    );
    await a.pool.query(
      `INSERT INTO durable_run_events (run_id, kind, detail) VALUES ('W-1', 'suspended', jsonb_build_object('until', now() + interval '1 hour', 'waits', '[{"seq":1,"kind":"recv","key":"approval"}]'::jsonb))`,
    );
    await page.goto(`${url}/durable/#run=W-1`);
    await page.locator('#run-waiting[data-waiting="recv"]').waitFor();
    const waiting = await page.locator('#run-waiting').innerText();
    expect(waiting).toContain('a message on topic approval (no timeout)');
    expect(waiting).toContain('safety re-check');

    const failed = await client.start('admin.fail', { reason: 'card declined' });
    await failed.result({ timeoutMs: 10_000 }).catch(() => undefined);
    await page.goto(`${url}/durable/#run=${failed.id}`);
    await page.locator('#steps tr.step[data-seq="1"]').click();
    const box = page.locator('#steps .step-error .error-box');
    await box.waitFor();
    expect(await box.locator('strong').innerText()).toContain('explode: card declined');
    const stack = await box.locator('pre').innerText();
    expect(stack.split('\n').length).toBeGreaterThan(2);
    expect(stack).not.toContain('\\n');
    // The columns stay in view: the duration cell of the failed step is inside the pane.
    const [pane, dur] = await rects(page, ['#detail-view', '#steps tr.step[data-seq="1"] .dur']);
    expect(dur.x + dur.width).toBeLessThanOrEqual(pane.x + pane.width);
    await shot('1440-step-error');

    const sum = await client.start('admin.sum', { n: 3 });
    await sum.result({ timeoutMs: 10_000 });
    await page.goto(`${url}/durable/#idPrefix=${sum.id}`);
    // The row can be on the page already from a list the live stream reloaded while the run was still
    // RUNNING (no output yet); the filtered list, or the stream's next reload, shows its result.
    const output = page.locator(`#runs-body tr[data-run="${sum.id}"] [data-output]`);
    await output.filter({ hasText: '"total": 6' }).waitFor({ timeout: 10_000 });
    expect(await output.innerText()).toContain('"total": 6');
    await page.locator(`#runs-body tr[data-run="${sum.id}"]`).click();
    await page.click('#btn-fork');
    await page.fill('#confirm-step', '1');
    await page.locator('#confirm-step').dispatchEvent('input');
    const warning = await page.locator('#confirm-warning').innerText();
    expect(warning).toContain('Every step from #1 on runs again (#1 add, #2 add)');
    await shot('1440-fork-warning');
    await page.click('#confirm-no');
  });

  it('lists a backfill with its progress, and pauses and resumes it from the Backfills panel', async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    const run = await client.start('admin.numbers', { total: 100_000, rowsPerSecond: 200 }, { id: 'numbers-backfill' });
    await page.goto(`${url}/durable/`);
    await page.locator('#backfills > summary').click();
    const row = page.locator('#backfills-table tr[data-run="numbers-backfill"]');
    await row.waitFor();
    await eventually(
      async () => Number(await row.locator('td[data-done]').getAttribute('data-done')) > 0,
      15_000,
      'rows done in the panel',
    );
    expect(await row.locator('td[data-done]').innerText()).toMatch(/ \/ 100,000 \(\d+ %\)/);
    await row.locator('button[data-action="pause"]').click();
    await row.locator('td[data-status="PAUSED"]').waitFor({ timeout: 20_000 });
    // The backfill reports itself paused, then suspends: its run is WAITING a moment later (a loaded machine stretches it).
    await eventually(async () => (await client.getRun(run.id))?.status === 'WAITING' || undefined, 20_000, 'the paused backfill to wait');
    await row.locator('button[data-action="resume"]').click();
    await row.locator('td[data-status="RUNNING"], td[data-status="WAITING"]').first().waitFor({ timeout: 20_000 });
    await eventually(
      async () => (await client.backfills()).find((b) => b.runId === run.id)?.paused === false,
      20_000,
      'the backfill to go on',
    );
    await client.cancel(run.id);
  });

  it('draws the throughput and failure charts over 1 h, 24 h and 7 d', async () => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(`${url}/durable/`);
    await page.click('#charts button[data-range="7d"]');
    await page.locator('#chart-throughput[data-range="7d"] svg rect').first().waitFor();
    expect(await page.locator('#chart-failures[data-range="7d"] svg rect').count()).toBeGreaterThan(0);
    await page.click('#charts button[data-range="1h"]');
    await page.locator('#chart-throughput[data-range="1h"]').waitFor();
    expect(await page.locator('#charts').evaluate((d) => (d as unknown as { open: boolean }).open)).toBe(true);
    await page.locator('#charts').scrollIntoViewIfNeeded();
    await shot('1440-charts');
  });

  for (const width of [1440, 800]) {
    it(`keeps the open run's header below the page header at ${width} px`, async () => {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${url}/durable/#status=SUCCEEDED`);
      await page.locator('#runs-body tr').first().waitFor();
      await page.locator('#runs-body tr').first().click();
      await page.locator('#run-id').waitFor();
      await page.mouse.wheel(0, 1500);
      await page.waitForTimeout(300);
      const [header, id] = await rects(page, ['header.top', '#run-id']);
      // Wide, the run pane sticks below the page header; narrow (the header wraps to several rows),
      // the header scrolls away with the page instead of covering it.
      if (width > 1100) expect(id.y).toBeGreaterThanOrEqual(header.y + header.height);
      else expect(header.y + header.height).toBeLessThanOrEqual(0);
      await shot(`${width}-detail`);
      await page.mouse.wheel(0, -3000);
      await page.waitForTimeout(300); // without it the screenshot caught a blank frame mid-scroll
      await page.locator('header.top').waitFor();
      await shot(`${width}-list`);
    });
  }
});
