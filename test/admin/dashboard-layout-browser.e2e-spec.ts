import { join } from 'node:path';
import { WorkflowClient } from 'nestjs-durable';
import pw from 'playwright-core';
import { bearerGuard, createAdminApp, seedRuns, type AdminApp } from './support/admin-app.js';
import { eventually } from '../support/engine-harness.js';
import { describeBrowser } from '../support/chromium.js';
import { ARTIFACTS, launchChromium } from './support/browser.js';

/**
 * The dashboard's rough edges in headless Chromium: live updates that start once the token is
 * entered; at 800 and 1,440 px wide with each panel open, no horizontal scroll, every button on
 * screen, readable runs-table columns (the split view too) and the runs list on the first screen;
 * "Run now" asks first; the trace id is whole and has a copy button; one (24-hour) time format;
 * bulk actions offered only where they can act.
 */
const PANELS = ['groups', 'schedules', 'versions', 'flow', 'hooks', 'charts'];
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

type Layout = {
  scrollWidth: number;
  innerWidth: number;
  innerHeight: number;
  listTop: number;
  offscreen: string[];
  narrowHeads: string[];
  openPanels: string[];
};

/** What the page looks like now: document width, buttons outside the viewport, runs-table headers cut or too narrow. */
function measure(page: pw.Page): Promise<Layout> {
  return page.evaluate(() => {
    const g = globalThis as any;
    const doc = g.document;
    const vw = g.innerWidth;
    const label = (e: any) => `${e.id ? '#' + e.id : e.tagName.toLowerCase()} "${String(e.textContent).trim().slice(0, 30)}"`;
    const offscreen: string[] = [];
    for (const b of doc.querySelectorAll('button')) {
      if (b.closest('dialog') || b.closest('details:not([open]) > :not(summary)') || b.closest('[hidden]')) continue;
      const r = b.getBoundingClientRect();
      if (r.width === 0 && r.height === 0) continue; // not displayed
      if (r.left < -0.5 || r.right > vw + 0.5) offscreen.push(`${label(b)} at ${Math.round(r.left)}..${Math.round(r.right)}`);
    }
    const wrap = doc.querySelector('#list-view .table-wrap').getBoundingClientRect();
    const narrowHeads: string[] = [];
    for (const th of doc.querySelectorAll('#runs thead th')) {
      if (th.classList.contains('c-sel')) continue;
      const r = th.getBoundingClientRect();
      if (r.width === 0) continue; // a column hidden at this width
      const cut = th.scrollWidth > th.clientWidth + 1 || r.right > wrap.right + 0.5;
      if (cut || r.width < 40)
        narrowHeads.push(`${th.textContent} (${Math.round(r.width)} px, right ${Math.round(r.right)} of ${Math.round(wrap.right)})`);
    }
    return {
      scrollWidth: doc.documentElement.scrollWidth,
      innerWidth: vw,
      innerHeight: g.innerHeight,
      listTop: doc.querySelector('#runs').getBoundingClientRect().top,
      offscreen,
      narrowHeads,
      openPanels: [...doc.querySelectorAll('details.groups[open]')].map((d: any) => d.id),
    };
  });
}

describeBrowser('dashboard layout and rough edges in headless Chromium', () => {
  const TOKEN = 'layout-test-token';
  let a: AdminApp;
  let url: string;
  let browser: pw.Browser;
  let client: WorkflowClient;
  let tracedId: string;
  let succeededId: string;
  const errors: string[] = [];

  const open = async (width: number, hash = '') => {
    const page = await browser.newPage({ viewport: { width, height: 900 } });
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.addInitScript(`sessionStorage.setItem('nestjs-durable.token', ${JSON.stringify(TOKEN)})`);
    await page.goto(`${url}/durable/${hash}`);
    await page.locator('#runs-body tr').first().waitFor();
    return page;
  };
  const admin = (path: string, body: unknown) =>
    fetch(`${url}/durable/${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });

  beforeAll(async () => {
    a = await createAdminApp('dash_layout', { admin: { guards: [bearerGuard(TOKEN)] } });
    await a.app.listen(0, '127.0.0.1');
    url = (await a.app.getUrl()).replace('[::1]', '127.0.0.1');
    client = a.app.get(WorkflowClient);
    await seedRuns(a.pool, { count: 120, steps: 2, spacingMs: 30_000, newestAgoMs: 5_000, workflows: ['billing.chargeCustomerCard'] });
    // Panels with content: schedules, a queue with limits and busy keys, a debounced run.
    await client.schedules.create({
      id: 'report:acme-corporation-weekly',
      workflow: 'admin.sum',
      cron: '0 0 6 * * MON',
      timeZone: 'Europe/Berlin',
    });
    await client.schedules.create({
      id: 'report:globex',
      workflow: 'admin.sum',
      cron: '0 30 4 1 1 *', // once a year: the test's own "Run now" is the only run (an hourly one fired at a full hour mid-test)
      catchUp: 'all',
      catchUpWindowMs: 3_600_000,
      jitterMs: 500,
    });
    await a.pool.query(`
      INSERT INTO durable_runs (id, workflow_name, queue, status, available_at, debounce_key, debounce_until)
      VALUES ('L-debounced', 'search.reindex', 'seed-g', 'PENDING', now() + interval '1 hour', 'doc-42', now() + interval '2 hours')`);
    const limits = await admin('flow/queues/admin-slow/limits', { globalConcurrency: 3, rateLimit: { limit: 100, periodMs: 10_000 } });
    expect(limits.status).toBeLessThan(300);
    const traced = await client.start('admin.sum', { n: 2 });
    await traced.result({ timeoutMs: 10_000 });
    tracedId = traced.id;
    succeededId = traced.id;
    await a.pool.query(`UPDATE durable_runs SET traceparent = $2 WHERE id = $1`, [tracedId, TRACEPARENT]);
    browser = await launchChromium();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await a?.close();
  });

  it('starts streaming live updates when the token is entered, without a reload', async () => {
    const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    await page.goto(`${url}/durable/`);
    await page.locator('#auth-banner').waitFor({ state: 'visible' });
    await page.locator('#live-mode[data-live="poll"]').waitFor({ timeout: 10_000 }); // the stream was refused (no token)
    await page.fill('#token-input', TOKEN);
    await page.click('#token-form button[type=submit]');
    await page.locator('#runs-body tr').first().waitFor();
    await page.locator('#live-mode[data-live="sse"]').waitFor({ timeout: 10_000 });
    await page.close();
  });

  for (const width of [800, 1440]) {
    it(`at ${width} px with each panel open: no horizontal scroll, every button on screen, readable columns, the runs list on the first screen`, async () => {
      const page = await open(width);
      for (const id of PANELS) {
        await page.click(`#${id} > summary`);
        await page.locator(`#${id}-body > *`).first().waitFor();
        await page.waitForTimeout(100); // the panel's first render settled
        await page.screenshot({ path: join(ARTIFACTS, `dashboard-layout-${width}-${id}.png`) });
        const m = await measure(page);
        const where = `${width} px, panel ${id} open`;
        expect({ where, scrollWidth: m.scrollWidth }).toEqual({ where, scrollWidth: m.innerWidth });
        expect({ where, offscreen: m.offscreen }).toEqual({ where, offscreen: [] });
        expect({ where, narrowHeads: m.narrowHeads }).toEqual({ where, narrowHeads: [] });
        // The runs list starts with room for a few rows on the first screen.
        const listTop = Math.round(m.listTop);
        expect({ where, listTop }).toEqual({ where, listTop: Math.min(listTop, m.innerHeight - 120) });
      }
      // Opening every panel in turn leaves one open: they never stack up above the runs list.
      expect((await measure(page)).openPanels).toEqual(['charts']);
      // The split view (a run open beside the list): its columns readable too.
      await page.click(`#runs-body tr:first-child td.id`);
      await page.locator('#run-id').waitFor();
      const split = await measure(page);
      expect({ width, split: split.narrowHeads }).toEqual({ width, split: [] });
      expect(split.scrollWidth).toBe(split.innerWidth);
      expect(split.offscreen).toEqual([]);
      await page.screenshot({ path: join(ARTIFACTS, `dashboard-layout-${width}-split.png`) });
      await page.close();
    }, 60_000);
  }

  it('asks before "Run now" starts a scheduled run', async () => {
    const page = await open(1440);
    await page.click('#schedules > summary');
    const row = page.locator('tr[data-schedule="report:globex"]');
    await row.waitFor();
    await row.locator('button[data-action="trigger"]').click();
    await page.locator('#confirm').waitFor({ state: 'visible' });
    expect(await page.locator('#confirm-text').innerText()).toContain('report:globex');
    await page.click('#confirm-no');
    await page.locator('#confirm').waitFor({ state: 'hidden' });
    expect((await client.schedules.get('report:globex'))!.lastFiredAt).toBeNull(); // Back: nothing started
    await row.locator('button[data-action="trigger"]').click();
    await page.click('#confirm-yes');
    await eventually(async () => (await client.schedules.get('report:globex'))!.lastFiredAt !== null, 10_000, 'the confirmed run');
    await page.close();
  });

  for (const width of [800, 1440]) {
    it(`shows the whole trace id with a copy button at ${width} px`, async () => {
      const page = await open(width, `#run=${tracedId}`);
      await page.locator('#run-trace').waitFor();
      expect(await page.locator('#run-trace').innerText()).toBe(TRACEPARENT.split('-')[1]);
      // Not cut: the text fits its cell, and the cell lies inside the run's pane. Read in one turn of
      // the page's event loop: the pane re-renders on live updates (the element may be replaced).
      const fits = await page.evaluate(() => {
        const doc = (globalThis as any).document;
        const e = doc.querySelector('#run-trace');
        const dd = e.closest('dd');
        const pane = doc.querySelector('#detail-view').getBoundingClientRect();
        const r = e.getBoundingClientRect();
        return dd.scrollWidth <= dd.clientWidth + 1 && r.right <= pane.right && r.left >= pane.left;
      });
      expect(fits).toBe(true);
      await page.locator('#copy-trace').click();
      await page.locator('.toast').first().waitFor();
      await page.close();
    });
  }

  it('writes every time in one 24-hour format, the flow panel included', async () => {
    const page = await open(1440);
    await page.click('#flow > summary');
    await page.locator('#flow-debounced').waitFor();
    const text = await page.locator('#flow-body').innerText();
    expect(text).not.toMatch(/\b(AM|PM)\b/);
    expect(await page.locator('#flow-debounced tbody td').nth(3).innerText()).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    await page.close();
  });

  it('offers an action only where it can act: a finished run is not cancelled, resumed or retried', async () => {
    const page = await open(1440, `#status=SUCCEEDED`);
    await page.locator(`#runs-body tr [data-status="SUCCEEDED"]`).first().waitFor();
    await page.locator('#runs-body input.sel').first().check();
    await page.locator('#bulk-bar button[data-bulk="delete"]').waitFor();
    expect(await page.locator('#bulk-bar button[data-bulk="cancel"]').isDisabled()).toBe(true);
    expect(await page.locator('#bulk-bar button[data-bulk="resume"]').isDisabled()).toBe(true);
    expect(await page.locator('#bulk-bar button[data-bulk="retry"]').isDisabled()).toBe(true);
    expect(await page.locator('#bulk-bar button[data-bulk="delete"]').isDisabled()).toBe(false);
    await page.click(`#runs-body tr[data-run="${succeededId}"] td.id`);
    await page.locator('#run-status [data-status="SUCCEEDED"]').waitFor();
    expect(await page.locator('#btn-cancel').isDisabled()).toBe(true);
    expect(await page.locator('#btn-resume').isDisabled()).toBe(true);
    await page.close();
    expect(errors).toEqual([]);
  });
});
