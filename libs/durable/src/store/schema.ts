/** The startup check: the tables and indexes the engine needs exist. */
import { statement } from './statement.js';
import type { Store } from './store.js';

/** The columns of `table` among `names` (0 when the table is missing). */
const columnCount = (table: string, names: string[]) =>
  `(SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass('${table}') AND NOT attisdropped
     AND attname IN (${names.map((n) => `'${n}'`).join(', ')}))::int = ${names.length}`;

/** Checks that the tables, the claim index and the columns of later migrations exist (startup). */
const SCHEMA_CHECK = statement(
  'schema_check',
  `
SELECT to_regclass('durable_runs') IS NOT NULL AS runs, to_regclass('durable_steps') IS NOT NULL AS steps,
       to_regclass('durable_messages') IS NOT NULL AS messages, to_regclass('durable_events') IS NOT NULL AS events,
       to_regclass('durable_run_events') IS NOT NULL AS run_events,
       to_regclass('durable_runs_claim_idx') IS NOT NULL AS claim_idx,
       to_regclass('durable_runs_wake_idx') IS NOT NULL AS wake_idx,
       ${columnCount('durable_runs', ['cancel_requested_at', 'progress'])} AS authoring_runs,
       ${columnCount('durable_steps', ['compensation', 'compensates'])} AS authoring_steps`,
);

const REQUIRED: Record<string, string> = {
  runs: 'table durable_runs',
  steps: 'table durable_steps',
  messages: 'table durable_messages',
  events: 'table durable_events',
  run_events: 'table durable_run_events',
  claim_idx: 'index durable_runs_claim_idx',
  wake_idx: 'index durable_runs_wake_idx',
  authoring_runs: 'columns durable_runs.cancel_requested_at and .progress (migration "authoring")',
  authoring_steps: 'columns durable_steps.compensation and .compensates (migration "authoring")',
};

/** What is missing from the database (empty when the schema is in place). */
export async function missingSchemaObjects(store: Store): Promise<string[]> {
  const [row] = await store.sql.query<Record<string, boolean>>(SCHEMA_CHECK);
  return Object.keys(REQUIRED)
    .filter((k) => !row[k])
    .map((k) => REQUIRED[k]);
}
