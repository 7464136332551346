/** The settings a transactional step applies to its transaction (engine option `context.settings`; PostgreSQL). */
import { statement } from './statement.js';
import type { Store } from './store.js';

/**
 * SET LOCAL of each setting: $1 names, $2 values (set_config(name, value, true): until the end of
 * the transaction; a name with a dot is a custom setting the app's row-level security policies read
 * with current_setting('app.tenant_id', true)). No table is read.
 */
const SET_LOCAL = statement(
  'set_local',
  `SELECT count(set_config(s.name, s.value, true))::int AS n FROM unnest($1::text[], $2::text[]) AS s(name, value)`,
);

/** Applies the settings to the transaction `store` runs in (a store made by storeWithin). */
export async function setLocal(store: Store, settings: { names: string[]; values: string[] }): Promise<void> {
  await store.sql.query(SET_LOCAL, [settings.names, settings.values]);
}
