import type { DurableEngine } from '../engine/durable-engine.js';
import type { SqlClient } from '../store/sql-client.js';
import type { Store } from '../store/store.js';
import type { ReadReplica } from './read-replica.js';
import { refuseInDistributedMode } from '../engine/distributed-mode.js';

/**
 * What every part of the admin service reads through: the engine (resolved late: the Nest module
 * creates it after the admin providers) and its store, optionally limited (`limit` wraps the
 * connection, e.g. at most a few admin statements at a time).
 */
export class AdminContext {
  constructor(
    private readonly engineRef: () => DurableEngine,
    private readonly limit: (sql: SqlClient) => SqlClient = (sql) => sql,
    /** Where lists, counts, statistics and charts are read, when the admin API has a read replica. */
    readonly replica: ReadReplica | null = null,
  ) {}

  get engine(): DurableEngine {
    return this.engineRef();
  }

  get store(): Store {
    const store = this.engine.storeForTools;
    refuseInDistributedMode(store, 'admin API', 'The admin API (lists, statistics, the dashboard and the runs CLI)');
    return { ...store, sql: this.limit(store.sql) };
  }

  /** The store for reads that may lag a little (lists, counts, statistics, charts): the replica's, if any. */
  get readStore(): Store {
    return this.replica ? this.replica.store : this.store;
  }
}

export const iso = (d: Date | null) => (d ? d.toISOString() : null);
