import type { DurableEngine } from '../engine/durable-engine.js';
import type { SqlClient } from '../store/sql-client.js';
import type { Store } from '../store/store.js';

/**
 * What every part of the admin service reads through: the engine (resolved late: the Nest module
 * creates it after the admin providers) and its store, optionally limited (`limit` wraps the
 * connection, e.g. at most a few admin statements at a time).
 */
export class AdminContext {
  constructor(
    private readonly engineRef: () => DurableEngine,
    private readonly limit: (sql: SqlClient) => SqlClient = (sql) => sql,
  ) {}

  get engine(): DurableEngine {
    return this.engineRef();
  }

  get store(): Store {
    const store = this.engine.storeForTools;
    return { ...store, sql: this.limit(store.sql) };
  }
}

export const iso = (d: Date | null) => (d ? d.toISOString() : null);
