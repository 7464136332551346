import pg from 'pg';
import { runDistributeCommand } from '../../libs/durable/src/cli/distribute-command.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * `npx nestjs-durable distribute` given what it cannot use: a bad partition count, no database, a
 * database that is not PostgreSQL, a PostgreSQL without Citus. Each is a clear message and an exit
 * code (2: the command line, 1: refused), and nothing is created in the database. (On a Citus cluster:
 * a second count and unfinished keyed runs are refused too, test/citus/distribution-setup.e2e-spec.ts.)
 */
describe('bad input: npx nestjs-durable distribute', () => {
  let db: TestDatabase;
  let pool: pg.Pool;
  const run = async (args: string[], env: Record<string, string | undefined>) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runDistributeCommand(args, { cwd: process.cwd(), out: (t) => out.push(t), err: (t) => err.push(t) }, env);
    return { code, out: out.join('\n'), err: err.join('\n') };
  };
  /** What distributed mode would have created: partition schemas, its row table, its trigger. */
  const created = async () =>
    (
      await pool.query<{ what: string }>(
        `SELECT nspname AS what FROM pg_namespace WHERE nspname LIKE 'durable_p%'
         UNION ALL SELECT relname FROM pg_class WHERE relname = 'durable_distribution'
         UNION ALL SELECT tgname FROM pg_trigger WHERE tgname = 'durable_distributed'`,
      )
    ).rows.map((r) => r.what);

  beforeAll(async () => {
    db = await createTestDatabase('distribute_refusals');
    pool = new pg.Pool({ connectionString: db.url, max: 1 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('a partition count that is not a whole number from 1 to the maximum: a usage error, exit 2', async () => {
    for (const count of ['0', '-3', '2.5', 'many', '100000']) {
      const r = await run(['--partitions', count], { DATABASE_URL: db.url });
      expect({ count, code: r.code }).toEqual({ count, code: 2 });
      expect(r.err).toMatch(/--partitions/);
    }
    expect((await run([], { DATABASE_URL: db.url })).code).toBe(2);
    expect(await created()).toEqual([]);
  });

  it('no database, or one that is not PostgreSQL: a usage error that says what to set', async () => {
    const none = await run(['--partitions', '8'], {});
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/DATABASE_URL/);
    const maria = await run(['--partitions', '8'], { DATABASE_URL: 'mysql://root@127.0.0.1:3306/shop' });
    expect(maria.code).toBe(2);
    expect(maria.err).toMatch(/needs Citus, a PostgreSQL extension/);
  });

  it('a PostgreSQL database without Citus: refused (exit 1), saying to create the extension, nothing created', async () => {
    const r = await run(['--partitions', '8'], { DATABASE_URL: db.url });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/citus extension is not installed in this database: CREATE EXTENSION citus first/);
    expect(await created()).toEqual([]);
  });
});
