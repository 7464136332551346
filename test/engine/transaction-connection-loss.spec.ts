import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { EngineHarness, sleep } from '../support/engine-harness.js';

/**
 * Found by the CI-sized chaos run (a connection outage while the flow-control claim's transactions
 * ran): a pooled connection that dies between two statements of a transaction emits 'error' on its
 * client, which nobody listened to — the worker process crashed on an unhandled 'error' event. The
 * transaction must fail like any statement on a lost connection, and the process go on.
 */
describe('a connection lost inside a transaction', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('tx_connection_loss');
  });
  afterAll(() => h.close());

  it('fails the transaction (no unhandled error event) and the pool serves the next statement', async () => {
    const sql = pgSqlClient(h.pool, { prepared: false });
    const crashes: unknown[] = [];
    const onUncaught = (e: unknown) => crashes.push(e);
    process.on('uncaughtException', onUncaught);
    try {
      await expect(
        sql.transaction(async (tx) => {
          const [{ pid }] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          await h.query('SELECT pg_terminate_backend($1)', [pid]);
          await sleep(300); // the connection ends while no statement of this transaction is running
          await tx.query('SELECT 1');
        }),
      ).rejects.toThrow();
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    expect(crashes).toEqual([]);
    expect(await sql.query<{ one: number }>('SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });
});
