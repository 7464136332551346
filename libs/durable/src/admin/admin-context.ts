import type { DurableEngine } from '../engine/durable-engine.js';
import type { SqlClient } from '../store/sql-client.js';
import type { Store } from '../store/store.js';
import type { ReadReplica } from './read-replica.js';

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
    return { ...store, sql: this.limit(store.sql) };
  }

  /**
   * The store for reads that may lag a little (lists, counts, statistics, charts): the replica's, if
   * any. In distributed mode (Citus) the reads go to the coordinator, which reads every partition.
   */
  get readStore(): Store {
    const store = this.store;
    return this.replica && store.layout.partitions === null ? this.replica.store : store;
  }
}

export const iso = (d: Date | null) => (d ? d.toISOString() : null);
