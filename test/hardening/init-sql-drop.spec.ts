import { spawnSync } from 'node:child_process';
import { MARIADB_AVAILABLE } from '../support/databases.js';
import { createMariaTestDatabase } from '../support/mariadb.js';
import { childArgs } from '../support/processes.js';

(MARIADB_AVAILABLE ? describe : describe.skip)('a Prisma client on MariaDB whose connections drop while their initSql runs', () => {
  it('keeps its process alive: the queries fail and are retried, nothing is thrown at the process', async () => {
    const db = await createMariaTestDatabase('init_sql_drop');
    try {
      const r = spawnSync(process.execPath, await childArgs('test/hardening/init-sql-drop-main.ts'), {
        env: { ...process.env, NODE_OPTIONS: '', DATABASE_URL: db.url },
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
      const [, succeeded, dropped] = /^succeeded (\d+), dropped during initSql (\d+)$/m.exec(r.stdout) ?? [];
      expect(Number(dropped)).toBeGreaterThan(0);
      expect(Number(succeeded)).toBeGreaterThan(0);
    } finally {
      await db.drop();
    }
  });
});
