/**
 * Distributed mode (Citus): the runs are spread over a fixed number of partitions, each a schema of
 * its own (`durable_p0`, `durable_p1`, …) that holds a full set of the per-run tables. With Citus'
 * schema-based sharding every such schema lives on one node, and a statement that touches one
 * schema's tables (and reference tables) runs there: every statement of the engine names one run,
 * or one partition, so it is single-shard by construction, and its text is the single-server one
 * with the table names qualified. Adding nodes moves whole partitions (the rebalancer); a run's
 * partition never changes, because it is a function of its id.
 */
import { createHash } from 'node:crypto';
import type { SqlClient } from './sql-client.js';
import type { Statement } from './statement.js';

/** The tables of one run's data: one copy per partition. The others (schedules, limits…) are shared reference tables. */
export const PARTITIONED_TABLES = [
  'durable_runs',
  'durable_steps',
  'durable_messages',
  'durable_events',
  'durable_run_events',
  'durable_child_groups',
  'durable_group_ends',
  'durable_stream_chunks',
] as const;

/** The schema of partition `k`. */
export const partitionSchema = (k: number): string => `durable_p${k}`;

/** The most partitions a database may be set up with. */
export const MAX_PARTITIONS = 1024;

/** The suffixes partitionKey strips, as a POSIX pattern (the SQL version, partitionOfSql, uses the same text). */
export const CHILD_SUFFIXES_PATTERN = '(:child:[0-9]+|:g[0-9]+:[0-9]+)+$';
const CHILD_SUFFIXES = new RegExp(CHILD_SUFFIXES_PATTERN);

/**
 * The part of a run id its partition is computed from: the id without the suffixes the engine gives
 * its children (`<parent>:child:<seq>`, `<parent>:g<seq>:<index>`), so that a child lands in its
 * parent's partition, its waits and results on the same node as the parent's.
 */
export function partitionKey(id: string): string {
  return id.replace(CHILD_SUFFIXES, '');
}

/** The partition of run `id` among `count`: the first 32 bits of the MD5 of its partition key, modulo count. */
export function partitionOf(id: string, count: number): number {
  return createHash('md5').update(partitionKey(id)).digest().readUInt32BE(0) % count;
}

const TABLES = new RegExp(`\\b(${PARTITIONED_TABLES.join('|')})\\b`, 'g');
const rewritten = new Map<string, Statement>();

/** SQL text with the per-run tables of partition k. */
export const partitionText = (text: string, k: number): string => text.replace(TABLES, `${partitionSchema(k)}.$1`);

/** A statement with the per-run tables of partition k; a fixed statement gets a prepared name of its own per partition. */
function inPartition(s: Statement | string, k: number): Statement | string {
  if (typeof s === 'string') return partitionText(s, k);
  const name = `${s.name}_p${k}`;
  let out = rewritten.get(name);
  if (!out) rewritten.set(name, (out = { name, text: partitionText(s.text, k) }));
  return out;
}

/** The same connection, its statements sent to partition `k`'s tables. */
export function partitionSql(sql: SqlClient, k: number): SqlClient {
  return {
    dialect: sql.dialect,
    notify: sql.notify?.bind(sql),
    query: (s, params) => sql.query(inPartition(s, k), params),
    execute: (s, params) => sql.execute(inPartition(s, k), params),
    transaction: (fn) => sql.transaction((tx) => fn(partitionSql(tx, k))),
  };
}
