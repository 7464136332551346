/** The startup check: the tables and indexes the engine needs exist. */
import { statement } from './statement.js';
import type { Store } from './store.js';

/** Checks that the tables and the claim index exist (startup); schedules came with migration 20261201150000_schedules. */
const SCHEMA_CHECK = statement(
  'schema_check',
  `
SELECT to_regclass('durable_runs') IS NOT NULL AS runs, to_regclass('durable_steps') IS NOT NULL AS steps,
       to_regclass('durable_messages') IS NOT NULL AS messages, to_regclass('durable_events') IS NOT NULL AS events,
       to_regclass('durable_run_events') IS NOT NULL AS run_events,
       to_regclass('durable_runs_claim_idx') IS NOT NULL AS claim_idx,
       to_regclass('durable_runs_wake_idx') IS NOT NULL AS wake_idx,
       to_regclass('durable_schedules') IS NOT NULL AS schedules,
       to_regclass('durable_schedules_due_idx') IS NOT NULL AS schedules_due_idx,
       to_regclass('durable_runs_schedule_idx') IS NOT NULL AS runs_schedule_idx`,
);

const REQUIRED: Record<string, string> = {
  runs: 'table durable_runs',
  steps: 'table durable_steps',
  messages: 'table durable_messages',
  events: 'table durable_events',
  run_events: 'table durable_run_events',
  claim_idx: 'index durable_runs_claim_idx',
  wake_idx: 'index durable_runs_wake_idx',
  schedules: 'table durable_schedules',
  schedules_due_idx: 'index durable_schedules_due_idx',
  runs_schedule_idx: 'index durable_runs_schedule_idx (and column durable_runs.schedule_id)',
};

/** What is missing from the database (empty when the schema is in place). */
export async function missingSchemaObjects(store: Store): Promise<string[]> {
  const [row] = await store.sql.query<Record<string, boolean>>(SCHEMA_CHECK);
  return Object.keys(REQUIRED)
    .filter((k) => !row[k])
    .map((k) => REQUIRED[k]);
}
