import pg from 'pg';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { eventually } from '../support/engine-harness.js';
import { shipmentHeaders, testEnv } from './support/example-app.js';
import { AppProcess, http } from './support/app-process.js';

/**
 * The example app as real processes on one database. SIGKILL it while the (slow) payment step
 * runs, start it again: the transactional stock reservation checkpointed before the kill is
 * replayed from its checkpoint, not executed again; the interrupted payment step runs again
 * (at-least-once; its idempotency key makes that harmless). Then SIGKILL it again while the run
 * sleeps durably before the review email, and a third process finishes it.
 */
describe('example app: crash mid-workflow and restart', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  const apps: AppProcess[] = [];
  const stockOf = async () => (await pool.query(`SELECT available, reserved FROM stock WHERE sku = 'grinder'`)).rows[0];
  const emails = async (orderId: string) =>
    (await pool.query(`SELECT kind FROM outbox_emails WHERE order_id = $1 ORDER BY created_at`, [orderId])).rows.map((r) => r.kind);
  // The review comes 6 s after shipping: longer than the in-memory wait limit (5 s), so the run suspends.
  const env = (extra: Record<string, string> = {}) =>
    testEnv(db.url, { REVIEW_REQUEST_DELAY_MS: '6000', SHIPMENT_REMINDER_MS: '600000', ...extra });
  const start = async (extra?: Record<string, string>) => {
    const app = await AppProcess.start(env(extra));
    apps.push(app);
    return app;
  };
  const failWithOutput = (err: Error): never => {
    throw new Error(`${err.message}\n${apps.map((a, i) => `--- process ${i + 1}:\n${a.output}`).join('\n')}`);
  };

  beforeAll(async () => {
    db = await createTestDatabase('example_crash');
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
  });
  afterAll(async () => {
    for (const a of apps) a.kill('SIGKILL');
    await Promise.all(apps.map((a) => a.exited));
    await pool?.end();
    await db?.drop();
  });

  it('finishes the order after SIGKILL during the payment step and during the durable sleep, re-running no checkpointed step', async () => {
    // 1st process: the gateway takes a minute, so the kill lands inside the charge step.
    const first = await start({ PAYMENT_MIN_LATENCY_MS: '60000', PAYMENT_MAX_LATENCY_MS: '60000' });
    const placed = await http(`${first.url}/orders`, {
      method: 'POST',
      body: { customer: 'Crash', email: 'crash@example.com', sku: 'grinder', quantity: 2 },
    });
    const id: string = placed.id;
    await first.waitFor(`charging order ${id}`);
    const mid = await http(`${first.url}/orders/${id}`);
    expect(mid).toMatchObject({ status: 'RESERVED', run: { status: 'RUNNING', attempt: 1 } });
    expect(mid.run.steps.map((s: { name: string }) => s.name)).toEqual(['reserve']);
    first.kill('SIGKILL');
    expect(await first.exited).toMatchObject({ signal: 'SIGKILL' });
    const stockAfterReserve = await stockOf();

    // 2nd process (quick gateway) claims the run once the dead process's lease expires (2 s here).
    const second = await start();
    await eventually(
      async () => (await http(`${second.url}/orders/${id}`)).status === 'PAID',
      30_000,
      'the order to be paid after the restart',
    ).catch(failWithOutput);
    expect(first.count(`reserving 2 × grinder for order ${id}`)).toBe(1);
    expect(second.count(`reserving 2 × grinder for order ${id}`)).toBe(0); // replayed from its checkpoint
    expect(second.count(`charging order ${id}`)).toBe(1); // the interrupted step ran again
    expect(await stockOf()).toEqual(stockAfterReserve);

    // The carrier's webhook; then the run sleeps durably (WAITING) before the review email.
    await http(`${second.url}/orders/${id}/shipment`, {
      method: 'POST',
      body: { trackingNumber: 'CRASH-1' },
      headers: shipmentHeaders(id, { trackingNumber: 'CRASH-1' }),
    });
    await eventually(
      async () => {
        const v = await http(`${second.url}/orders/${id}`);
        return v.status === 'SHIPPED' && v.run.status === 'WAITING' ? v : null;
      },
      15_000,
      'the run to sleep before the review email',
    ).catch(failWithOutput);
    expect((await pool.query(`SELECT lease_owner FROM durable_runs WHERE id = $1`, [id])).rows[0].lease_owner).toBeNull();
    second.kill('SIGKILL');
    await second.exited;

    // 3rd process: wakes the run when the sleep is over and sends the review request.
    const third = await start();
    const done = await eventually(
      async () => {
        const v = await http(`${third.url}/orders/${id}`);
        return v.run.status === 'SUCCEEDED' && v.emails.every((e: { sentAt: unknown }) => e.sentAt) ? v : null;
      },
      30_000,
      'the run to finish in the third process',
    ).catch(failWithOutput);

    expect(done).toMatchObject({ status: 'SHIPPED', trackingNumber: 'CRASH-1', chargeId: expect.stringMatching(/^ch_/) });
    expect(done.run.output).toEqual({ outcome: 'SHIPPED', chargeId: done.chargeId, trackingNumber: 'CRASH-1' });
    expect(
      done.run.steps
        .filter((s: { name: string }) => !s.name.startsWith('durable.'))
        .map((s: { name: string; attempts: number }) => [s.name, s.attempts]),
    ).toEqual([
      ['reserve', 1],
      ['charge', 1],
      ['markPaid', 1],
      ['markShipped', 1],
      ['requestReview', 1],
    ]);
    expect(third.count('reserving')).toBe(0);
    expect(third.count('charging')).toBe(0);
    expect(await stockOf()).toEqual(stockAfterReserve); // the stock moved exactly once
    expect(await emails(id)).toEqual(['order-confirmed', 'order-shipped', 'review-request']); // each exactly once

    // Graceful stop (app.enableShutdownHooks): Nest closes, then re-raises SIGTERM.
    expect(await third.stop()).toEqual({ code: null, signal: 'SIGTERM' });
  });
});
