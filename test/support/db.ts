import pg from 'pg';
import { adminQuery, TEMPLATE_DB, urlFor } from './global-setup.js';

export { adminQuery, urlFor };

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** A fresh database for one test file: a copy of the migrated template (~50 ms). */
export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const name = `durable_test_${label.replace(/[^a-z0-9]/gi, '_').toLowerCase()}_${process.pid}_${Math.floor(Math.random() * 1e6)}`;
  await adminQuery(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE_DB}`);
  return { name, url: urlFor(name), drop: () => dropDatabase(name) };
}

/**
 * Drops a test database once its sessions are gone. `pool.end()` resolves before the server has
 * closed the pool's connections; terminating them (WITH FORCE) in that gap makes the ended pool
 * emit an 'error' nobody listens to, which jest reports against whichever test runs next. So the
 * drop waits (up to 5 s) for the sessions to leave and only then forces out any that leaked.
 */
async function dropDatabase(name: string): Promise<void> {
  const c = new pg.Client({ connectionString: urlFor('postgres') });
  await c.connect();
  try {
    for (const until = Date.now() + 5_000; Date.now() < until;) {
      const { rows } = await c.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1', [name]);
      if (rows[0].n === 0) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await c.end();
  }
}
