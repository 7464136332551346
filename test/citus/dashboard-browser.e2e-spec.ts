import { Injectable, type INestApplication } from '@nestjs/common';
import { Durable, NonRetryableError, Workflow, WorkflowClient } from 'nestjs-durable';
import pg from 'pg';
import type pw from 'playwright-core';
import { partitionOf } from '../../libs/durable/src/store/partitions.js';
import { launchChromium } from '../admin/support/browser.js';
import { describeBrowser } from '../support/chromium.js';
import { CitusCluster, citusInstalled } from '../support/citus-cluster.js';
import { durableApp, type KindDatabase } from '../support/databases.js';
import { eventually } from '../support/engine-harness.js';
import { prismaFor } from '../support/prisma.js';

const PARTITIONS = 4;

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
 * The dashboard of an app in distributed mode (a Citus coordinator and two worker nodes), in headless
 * Chromium: the runs of every partition in one list with their counters, a failed run's steps and
 * error read from its partition, a waiting run cancelled from its page.
 */
(citusInstalled() || process.env.DURABLE_REQUIRE_CITUS === '1' ? describeBrowser : describe.skip)(
  'the dashboard in distributed mode (Citus), in headless Chromium',
  () => {
    let cluster: CitusCluster;
    let db: KindDatabase;
    let app: INestApplication;
    let browser: pw.Browser;
    let page: pw.Page;
    let url: string;
    const ids = Array.from({ length: 8 }, (_, n) => `ship-${n}`);

    beforeAll(async () => {
      cluster = await CitusCluster.start();
      const made = await cluster.database('durable_citus_dashboard', PARTITIONS);
      const pool = new pg.Pool({ connectionString: made.url, max: 2 });
      const prisma = prismaFor(made.url);
      db = {
        kind: 'postgres',
        name: made.name,
        url: made.url,
        prisma,
        sql: (text) => text,
        query: async (text, params = []) => (await pool.query(text, params)).rows,
        close: async () => {
          await prisma.$disconnect();
          await pool.end();
        },
      };
      app = await durableApp(db, [Orders], { admin: { unsafeNoGuard: true } });
      await app.listen(0, '127.0.0.1');
      url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
      const client = app.get(WorkflowClient);
      for (const id of ids) await client.start('order.ship', { sku: id === 'ship-0' ? 'broken' : 'grinder' }, { id });
      await eventually(
        async () => {
          const statuses = await Promise.all(ids.map(async (id) => (await client.getRun(id))?.status));
          return statuses[0] === 'FAILED' && statuses.slice(1).every((s) => s === 'WAITING');
        },
        30_000,
        'the seeded runs',
      );
      browser = await launchChromium();
      page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
    }, 180_000);
    afterAll(async () => {
      await browser?.close();
      await app?.close();
      await db?.close();
      await cluster?.stop();
    });

    it('lists the runs of every partition with their counters, opens a failed run with its steps and error', async () => {
      expect(new Set(ids.map((id) => partitionOf(id, PARTITIONS))).size).toBeGreaterThan(1);
      await page.goto(`${url}/durable/`);
      await page.locator('#runs-body tr[data-run="ship-0"]').waitFor({ timeout: 15_000 });
      expect((await page.locator('#runs-body tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-run')))).sort()).toEqual(ids);
      await page.locator('[data-stat="Waiting"]').waitFor();
      expect(await page.locator('[data-stat="Waiting"]').innerText()).toMatch(/^\s*7\s/);
      await page.click('#runs-body tr[data-run="ship-0"]');
      await page.locator('#steps tbody tr.step').first().waitFor();
      const rows = await page.locator('#steps tbody tr.step').allInnerTexts();
      expect(rows).toHaveLength(2);
      expect(rows[0]).toContain('reserve');
      expect(rows[1]).toContain('FAILED');
      expect(await page.locator('#run-error').innerText()).toContain('card declined');
    }, 60_000);

    it('cancels a waiting run from its page', async () => {
      await page.goto(`${url}/durable/`);
      await page.locator('#runs-body tr[data-run="ship-3"]').waitFor({ timeout: 15_000 });
      await page.click('#runs-body tr[data-run="ship-3"]');
      await page.locator('#run-status [data-status="WAITING"]').waitFor();
      await page.click('#btn-cancel');
      await page.locator('#confirm').waitFor({ state: 'visible' });
      await page.click('#confirm-yes');
      await page.locator('#run-status [data-status="CANCELLED"]').waitFor({ timeout: 15_000 });
      expect((await app.get(WorkflowClient).getRun('ship-3'))?.status).toBe('CANCELLED');
    }, 60_000);
  },
);
