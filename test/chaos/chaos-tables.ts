import { partitionSchema } from '../../libs/durable/src/store/partitions.js';

/**
 * The durable tables the judge and the sampler read, as FROM items (always given an alias where
 * they are used: `FROM ${t.runs} r`). On a single server (Postgres, the Postgres copy of a MariaDB
 * run) they are the tables themselves; in distributed mode (Citus) the public tables are empty and
 * every run lives in one partition schema: each becomes the union of that table over the partitions
 * (durable_p0 … durable_p{K-1}). The checks are the same statements either way.
 */
export interface DurableTables {
  runs: string;
  steps: string;
  messages: string;
  runEvents: string;
  streamChunks: string;
}

const NAMES: Record<keyof DurableTables, string> = {
  runs: 'durable_runs',
  steps: 'durable_steps',
  messages: 'durable_messages',
  runEvents: 'durable_run_events',
  streamChunks: 'durable_stream_chunks',
};

/** The tables of a single server. */
export const SINGLE_SERVER_TABLES: DurableTables = { ...NAMES };

/** The tables of a database with `partitions` partitions (distributed mode), or of a single server (null). */
export function durableTables(partitions: number | null): DurableTables {
  if (partitions === null) return SINGLE_SERVER_TABLES;
  const union = (table: string) =>
    `(${Array.from({ length: partitions }, (_, k) => `SELECT * FROM ${partitionSchema(k)}.${table}`).join(' UNION ALL ')})`;
  return Object.fromEntries(Object.entries(NAMES).map(([key, table]) => [key, union(table)])) as unknown as DurableTables;
}
