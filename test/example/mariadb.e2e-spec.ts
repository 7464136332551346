import { eventually } from '../support/engine-harness.js';
import { MARIADB_AVAILABLE } from '../support/databases.js';
import { MARIADB_SERVER, mariaQuery } from '../support/mariadb.js';
import { AppProcess, http } from './support/app-process.js';
import { shipmentHeaders, testEnv } from './support/example-app.js';

/**
 * The example shop on MariaDB, as docs/databases.md tells a user to run it: DATABASE_URL=mysql://…
 * naming a database that does not exist yet. main.ts creates it with its tables; an order is placed,
 * paid, shipped and reviewed; the dashboard's API shows the run and the shop's durable cron; a second
 * start finds the tables and creates nothing.
 */
(MARIADB_AVAILABLE ? describe : describe.skip)('the example shop on MariaDB (DATABASE_URL=mysql://…)', () => {
  const database = `durable_example_${process.pid}`;
  const url = `${MARIADB_SERVER.replace(/\/$/, '')}/${database}`;
  let app: AppProcess | undefined;
  const admin = { authorization: 'Bearer test-admin-token' };

  afterAll(async () => {
    await app?.stop();
    await mariaQuery('mysql', `DROP DATABASE IF EXISTS \`${database}\``);
  });

  it('creates its tables, takes an order through payment, shipment and review, and shows it on the dashboard API', async () => {
    app = await AppProcess.start(testEnv(url));
    expect(app.output).toContain(`created the durable tables in ${database}`);
    expect(app.output).toContain(`created the shop's tables in ${database}`);
    expect(app.output).toMatch(/example shop on http:\S+ +\(MariaDB from DATABASE_URL\)/);
    const base = app.url;

    const placed = await http(`${base}/orders`, {
      method: 'POST',
      body: { customer: 'Ada', email: 'ada@example.com', sku: 'grinder', quantity: 1 },
    });
    expect(placed).toMatchObject({ status: 'NEW', amount: 12_900 });
    await eventually(async () => (await http(`${base}/orders/${placed.id}`)).status === 'PAID', 30_000, 'the order to be paid');
    const shipment = { trackingNumber: 'TRACK-M1' };
    await http(`${base}/orders/${placed.id}/shipment`, { method: 'POST', body: shipment, headers: shipmentHeaders(placed.id, shipment) });
    const done = await eventually(
      async () => {
        const v = await http(`${base}/orders/${placed.id}`);
        return v.run?.status === 'SUCCEEDED' && v.emails.length === 3 && v.emails.every((e: { sentAt: unknown }) => e.sentAt) ? v : null;
      },
      30_000,
      'the run to finish and its three emails to be sent',
    );
    expect(done).toMatchObject({ status: 'SHIPPED', trackingNumber: 'TRACK-M1' });
    expect(done.run.steps.map((s: { name: string }) => s.name).slice(0, 3)).toEqual(['reserve', 'charge', 'markPaid']);

    const runs = await http(`${base}/durable/runs?idPrefix=${placed.id}`, { headers: admin });
    expect(runs.items).toEqual([expect.objectContaining({ id: placed.id, status: 'SUCCEEDED' })]);
    const schedules = await http(`${base}/durable/schedules`, { headers: admin });
    expect(schedules.items.map((s: { id: string }) => s.id)).toContain('cancelUnpaidOrders');
    expect(await app.stop()).toEqual({ code: null, signal: 'SIGTERM' }); // graceful: Nest re-raises the signal once shut down

    // Started again on the same database: the tables are there, the order too.
    app = await AppProcess.start(testEnv(url));
    expect(app.output).not.toContain('created the');
    expect(await http(`${app.url}/orders/${placed.id}`)).toMatchObject({ status: 'SHIPPED' });
  }, 120_000);
});
