/**
 * Setting up distributed mode on a Citus cluster, and reading it back: the partition schemas (each a
 * copy of the per-run tables, distributed by Citus' schema-based sharding), the shared tables as
 * reference tables, and durable_distribution, the one row that tells every engine how many
 * partitions there are. Run once, after the durable tables exist (the Prisma migration).
 */
import { CHILD_SUFFIXES_PATTERN, MAX_PARTITIONS, PARTITIONED_TABLES, partitionSchema } from './partitions.js';
import type { SqlClient } from './sql-client.js';

/** The shared tables: small, read by every partition's statements, so a copy on every node. */
export const REFERENCE_TABLES = [
  'durable_schema',
  'durable_schedules',
  'durable_queue_limits',
  'durable_rate_windows',
  'durable_hook_cursors',
] as const;

/** Per-run tables whose id comes from a sequence: each partition draws from its own. */
const SEQUENCED: ReadonlyArray<(typeof PARTITIONED_TABLES)[number]> = ['durable_messages', 'durable_run_events'];

const referenceTable = (t: string) =>
  `SELECT create_reference_table('${t}') WHERE NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = '${t}'::regclass)`;

/** The statements that create partition k (idempotent). */
function partitionStatements(k: number): string[] {
  const s = partitionSchema(k);
  return [
    `CREATE SCHEMA IF NOT EXISTS ${s}`,
    ...SEQUENCED.map((t) => `CREATE SEQUENCE IF NOT EXISTS ${s}.${t}_id_seq`),
    ...PARTITIONED_TABLES.map((t) => `CREATE TABLE IF NOT EXISTS ${s}.${t} (LIKE ${t} INCLUDING ALL)`),
    ...SEQUENCED.map((t) => `ALTER TABLE ${s}.${t} ALTER COLUMN id SET DEFAULT nextval('${s}.${t}_id_seq')`),
    `DO $$ BEGIN
       IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = '${s}.durable_steps'::regclass AND contype = 'f') THEN
         ALTER TABLE ${s}.durable_steps ADD FOREIGN KEY (run_id) REFERENCES ${s}.durable_runs (id) ON DELETE CASCADE;
       END IF;
     END $$`,
    // Citus' schema-based sharding: the schema's tables move together to one node, colocated.
    `SELECT citus_schema_distribute('${s}') WHERE NOT EXISTS (SELECT 1 FROM citus_schemas WHERE schema_name = '${s}'::regnamespace)`,
  ];
}

/**
 * The statements that set up distributed mode with `partitions` partitions, in order. Idempotent
 * (a second run with the same count changes nothing); the count cannot change afterwards, since a
 * run's partition is a function of its id and the count.
 */
export function distributionStatements(partitions: number): string[] {
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > MAX_PARTITIONS)
    throw new RangeError(`partitions must be a whole number from 1 to ${MAX_PARTITIONS}, got ${String(partitions)}`);
  return [
    `DO $$ BEGIN
       IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
         RAISE EXCEPTION 'the citus extension is not installed in this database: CREATE EXTENSION citus first (on the coordinator and every worker node)';
       END IF;
     END $$`,
    `CREATE TABLE IF NOT EXISTS durable_distribution (partitions int NOT NULL CHECK (partitions BETWEEN 1 AND ${MAX_PARTITIONS}), created_at timestamptz NOT NULL DEFAULT now())`,
    `DO $$ BEGIN
       IF EXISTS (SELECT 1 FROM durable_distribution WHERE partitions <> ${partitions}) THEN
         RAISE EXCEPTION 'this database is distributed over % partitions already: the count cannot change', (SELECT partitions FROM durable_distribution);
       END IF;
     END $$`,
    ...['durable_distribution', ...REFERENCE_TABLES].map(referenceTable),
    ...Array.from({ length: partitions }, (_, k) => partitionStatements(k)).flat(),
    // One transaction, the single-server tables locked against writers: the runs move, and only then
    // does the database say it is distributed (engines read that at start) and refuse new runs in the
    // single-server tables (from an engine that started before).
    'BEGIN',
    `LOCK TABLE ${PARTITIONED_TABLES.join(', ')} IN EXCLUSIVE MODE`,
    // The runs of a dedupe or debounce key live in the key's partition, where a run's id must then land;
    // an unfinished keyed run of the single server has an id chosen without that: the move waits for them.
    `DO $$ BEGIN
       IF EXISTS (SELECT 1 FROM durable_runs WHERE (dedupe_key IS NOT NULL OR debounce_key IS NOT NULL)
                  AND status IN ('PENDING','RUNNING','WAITING')) THEN
         RAISE EXCEPTION 'runs started with a dedupeKey or a debounce key are unfinished: in distributed mode the runs of a key live in its partition, which their ids do not give. Let them end (or cancel them), then distribute again';
       END IF;
     END $$`,
    ...moveStatements(partitions),
    `INSERT INTO durable_distribution (partitions) SELECT ${partitions} WHERE NOT EXISTS (SELECT 1 FROM durable_distribution)`,
    `CREATE OR REPLACE FUNCTION durable_distributed_refusal() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
       RAISE EXCEPTION 'this database is distributed (npx nestjs-durable distribute): restart the app, its engine started before and writes to the single-server tables' USING ERRCODE = '55000';
     END $$`,
    'DROP TRIGGER IF EXISTS durable_distributed ON durable_runs',
    'CREATE TRIGGER durable_distributed BEFORE INSERT ON durable_runs FOR EACH STATEMENT EXECUTE FUNCTION durable_distributed_refusal()',
    'COMMIT',
  ];
}

/** The partition of the run id in SQL expression `id` among `count`: partitionOf (partitions.ts) in SQL. */
export const partitionOfSql = (id: string, count: number) =>
  `((('x' || substr(md5(regexp_replace(${id}, '${CHILD_SUFFIXES_PATTERN}', '')), 1, 8))::bit(32)::bigint % ${count})::int)`;

/** The run id column of each per-run table. */
const RUN_ID: Record<(typeof PARTITIONED_TABLES)[number], string> = {
  durable_runs: 'id',
  durable_steps: 'run_id',
  durable_messages: 'run_id',
  durable_events: 'run_id',
  durable_run_events: 'run_id',
  durable_child_groups: 'run_id',
  durable_group_ends: 'run_id',
  durable_stream_chunks: 'run_id',
};

/**
 * From a single server: the rows of the per-run tables (runs in flight and finished ones) move to
 * their partitions. Rows numbered by a sequence (messages, history) get new numbers from their
 * partition's sequence, in their old order: Citus draws a partition's numbers on the coordinator and
 * on each node from ranges of its own, which the old numbers could collide with. Nothing to do on a
 * database that has none. The engines must be stopped while this runs.
 */
function moveStatements(partitions: number): string[] {
  const moves = PARTITIONED_TABLES.flatMap((t) =>
    Array.from({ length: partitions }, (_, k) => {
      const into = `${partitionSchema(k)}.${t}`;
      const from = `FROM ${t} WHERE ${partitionOfSql(RUN_ID[t], partitions)} = ${k}`;
      if (!SEQUENCED.includes(t)) return `INSERT INTO ${into} SELECT * ${from}`;
      return `DO $$ DECLARE cols text; BEGIN
         SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) INTO cols
         FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '${t}' AND column_name <> 'id';
         EXECUTE format('INSERT INTO ${into} (%s) SELECT %s ${from.replace(/'/g, "''").replace(/%/g, '%%')} ORDER BY id', cols, cols);
       END $$`;
    }),
  );
  // Children first (the steps' foreign key), then the runs.
  return [...moves, ...[...PARTITIONED_TABLES].reverse().map((t) => `DELETE FROM ${t}`)];
}

/**
 * Sets up distributed mode (distributionStatements) on the connection (one connection: the move is
 * one transaction), statement by statement;
 * `progress` hears each partition as it is ready and each table whose rows moved.
 */
export async function distribute(sql: SqlClient, partitions: number, progress: (line: string) => void = () => {}): Promise<void> {
  const statements = distributionStatements(partitions);
  for (const s of statements) {
    const moved = /^INSERT INTO (durable_p\d+\.\w+) SELECT/.exec(s);
    const n = moved ? await sql.execute(s) : (await sql.query(s), 0);
    if (moved && n) progress(`moved ${n} row(s) to ${moved[1]}`);
    const schema = /^SELECT citus_schema_distribute\('(durable_p\d+)'\)/.exec(s);
    if (schema) progress(`partition ${schema[1]} ready`);
  }
}

/** How many partitions this database's runs are spread over, or null: a single server (no durable_distribution table). */
export async function readPartitions(sql: SqlClient): Promise<number | null> {
  if (sql.dialect !== 'postgres') return null;
  const [table] = await sql.query<{ t: string | null }>(`SELECT to_regclass('durable_distribution')::text AS t`);
  if (!table?.t) return null;
  const rows = await sql.query<{ n: number }>('SELECT partitions AS n FROM durable_distribution LIMIT 1');
  return rows.length ? Number(rows[0].n) : null;
}

/** A worker node of the Citus cluster, as the coordinator knows it. */
export interface WorkerNode {
  host: string;
  port: number;
}

/** The cluster's active worker nodes (the coordinator's own group, 0, left out). */
export async function readWorkerNodes(sql: SqlClient): Promise<WorkerNode[]> {
  const rows = await sql.query<{ host: string; port: number }>(
    `SELECT nodename AS host, nodeport AS port FROM pg_dist_node WHERE isactive AND noderole = 'primary' AND groupid <> 0 ORDER BY nodeid`,
  );
  return rows.map((r) => ({ host: r.host, port: Number(r.port) }));
}
