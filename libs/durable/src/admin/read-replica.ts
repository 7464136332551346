import type { Pool } from 'pg';
import type { DurableLogger } from '../config/options.js';
import { createPool, pgConfigFromUrl } from '../store/pool.js';
import { replicaLag, type ReplicaLag } from '../store/replica.js';
import { pgSqlClient } from '../store/sql-client.js';
import { createStore, type Store } from '../store/store.js';

/** Connections to the read replica: a few, for the admin API's heavy reads. */
const REPLICA_POOL_SIZE = 3;

/**
 * A read replica the admin API reads its lists, counts, statistics and charts from (a hot standby
 * of the app's database, or a URL naming several). Everything that writes, or must see its own
 * writes (a run's detail after an action, bulk actions, schedules, the live feed), stays on the primary.
 */
export class ReadReplica {
  readonly store: Store;
  private readonly pool: Pool;

  constructor(url: string, logger: () => Pick<DurableLogger, 'log' | 'warn' | 'error'>) {
    const config = { ...pgConfigFromUrl(url), application_name: 'nestjs-durable admin (read replica)' };
    this.pool = createPool(config, REPLICA_POOL_SIZE, {
      log: (m) => logger().log(m),
      warn: (m) => logger().warn(m),
      error: (m) => logger().error(m),
    });
    this.store = createStore(pgSqlClient(this.pool, { prepared: true }), { history: false });
  }

  lag(): Promise<ReplicaLag> {
    return replicaLag(this.store);
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => {});
  }
}
