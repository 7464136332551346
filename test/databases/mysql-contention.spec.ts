import { lazyMysqlPool, mysqlPoolConfig, mysqlSqlClient } from '../../libs/durable/src/store/mysql-client.js';
import { sleep } from '../support/engine-harness.js';
import { MARIADB_AVAILABLE, openDatabase, type KindDatabase } from '../support/databases.js';

/**
 * InnoDB resolves a deadlock by rolling one transaction back (error 1213): the engine's own
 * transactions are tried again from the top, counted, and logged — and nothing of the failed try
 * remains. Two real transactions lock two rows in opposite orders.
 */
(MARIADB_AVAILABLE ? describe : describe.skip)("MariaDB deadlocks in the engine's transactions", () => {
  let db: KindDatabase;
  beforeAll(async () => {
    db = await openDatabase('mariadb', 'contention');
    await db.query("INSERT INTO test_ledger (run_id, step, amount) VALUES ('a', 'x', 0), ('b', 'x', 0)");
  });
  afterAll(() => db.close());

  it('tries the rolled-back transaction again, once, and counts it', async () => {
    const pool = lazyMysqlPool(mysqlPoolConfig(db.url, 4));
    const retried: string[] = [];
    const sql = mysqlSqlClient(pool.get, undefined, (_counts, err) => retried.push(err.message));
    const tries = { first: 0, second: 0 };
    const crossing = (name: 'first' | 'second', a: string, b: string) =>
      sql.transaction(async (tx) => {
        tries[name]++;
        await tx.execute("UPDATE test_ledger SET amount = amount + 1 WHERE run_id = ? AND step = 'x'", [a]);
        await sleep(300); // both hold their first row before either asks for its second
        await tx.execute("UPDATE test_ledger SET amount = amount + 1 WHERE run_id = ? AND step = 'x'", [b]);
      });
    try {
      await Promise.all([crossing('first', 'a', 'b'), crossing('second', 'b', 'a')]);
    } finally {
      await pool.end();
    }
    expect(sql.counts).toEqual({ deadlocks: 1, lockWaitTimeouts: 0 });
    expect(retried).toHaveLength(1);
    expect(retried[0]).toMatch(/Deadlock found/);
    expect(tries.first + tries.second).toBe(3); // the victim ran twice
    // Each transaction's two updates applied once: the victim's first try left nothing behind.
    const rows = await db.query<{ run_id: string; amount: number }>(
      "SELECT run_id, amount FROM test_ledger WHERE step = 'x' ORDER BY run_id",
    );
    expect(rows.map((r) => [r.run_id, Number(r.amount)])).toEqual([
      ['a', 2],
      ['b', 2],
    ]);
  });
});
