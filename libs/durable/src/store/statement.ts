/**
 * A fixed statement of the engine: its SQL text and a name of its own. On the engine's pool it is
 * sent as a named prepared statement (`durable_<name>`): each connection parses and plans it once,
 * which the benchmark showed to be most of Postgres' work per statement on the hot path.
 * Composed statements (the admin API's, built per filter) are plain strings and never prepared.
 */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

const declared = new Map<string, string>();

/** Declares a fixed statement; a name can be declared once (two statements never share a prepared name). */
export function statement(name: string, text: string): Statement {
  const previous = declared.get(name);
  if (previous !== undefined && previous !== text) throw new Error(`statement "${name}" is declared twice with different SQL`);
  declared.set(name, text);
  return { name: `durable_${name}`, text };
}

/** Every fixed statement declared so far, by prepared name (for tools: statement counts, pg_stat_statements). */
export function engineStatements(): ReadonlyMap<string, string> {
  return new Map([...declared].map(([name, text]) => [`durable_${name}`, text]));
}
