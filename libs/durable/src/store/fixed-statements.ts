import * as SQL from './sql.js';
import * as WAIT_SQL from './wait-sql.js';

/**
 * The engine's fixed statements (every SQL constant of sql.ts and wait-sql.ts; not the admin
 * API's, which are composed per filter). The engine's pool sends these as prepared statements.
 */
export const FIXED_STATEMENTS: ReadonlySet<string> = new Set(
  [...Object.values(SQL), ...Object.values(WAIT_SQL)].filter((v): v is string => typeof v === 'string' && /\s/.test(v)),
);
