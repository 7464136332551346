// The ledger of the flow-control worker processes (test_ledger), on PostgreSQL or MariaDB: a row per
// start and end of a run's work, stamped with the database clock at the moment of the insert.
import { createPool } from 'mariadb';
import pg from 'pg';
import { mysqlPoolConfig } from '../../libs/durable/src/store/mysql-client.js';

export interface LedgerPool {
  /** Records `step` for the run now; returns how many rows of that step the run had before. */
  mark(runId: string, step: 'start' | 'end'): Promise<number>;
  end(): Promise<void>;
}

export async function ledgerPool(url: string): Promise<LedgerPool> {
  if (/^(mysql|mariadb):/.test(url)) {
    const pool = createPool(mysqlPoolConfig(url, 4) as never);
    return {
      mark: async (runId, step) => {
        const [{ n }] = await pool.query(`SELECT count(*) AS n FROM test_ledger WHERE run_id = ? AND step = ?`, [runId, step]);
        await pool.query(`INSERT INTO test_ledger (run_id, step, pid, at) VALUES (?, ?, ?, UTC_TIMESTAMP(3))`, [runId, step, process.pid]);
        return Number(n);
      },
      end: () => pool.end(),
    };
  }
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  return {
    mark: async (runId, step) => {
      const { rows } = await pool.query(
        `WITH prev AS (SELECT count(*)::int AS n FROM test_ledger WHERE run_id = $1 AND step = $3)
         INSERT INTO test_ledger (run_id, step, pid, at) SELECT $1, $3, $2, clock_timestamp() FROM prev RETURNING (SELECT n FROM prev)`,
        [runId, process.pid, step],
      );
      return rows[0].n;
    },
    end: () => pool.end(),
  };
}
