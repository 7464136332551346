/**
 * A JS array parameter as the text of a Postgres array literal (`{"a","b",NULL}`), the text
 * node-postgres sends for it, made with one join: node-postgres builds it by concatenating element by
 * element, with two regular-expression replaces per element, which made it the largest allocation
 * of a drained run (the batched statements send a dozen arrays of one element per run).
 */

/** The literal of an array of strings, numbers, booleans and nulls; undefined for anything else (node-postgres converts it then). */
export function pgArrayLiteral(values: readonly unknown[]): string | undefined {
  const parts = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null || v === undefined) parts[i] = 'NULL';
    else if (typeof v === 'string') parts[i] = QUOTE_OR_BACKSLASH.test(v) ? `"${v.replace(QUOTES_AND_BACKSLASHES, '\\$&')}"` : `"${v}"`;
    else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') parts[i] = `"${String(v)}"`;
    else return undefined;
  }
  return `{${parts.join(',')}}`;
}

const QUOTE_OR_BACKSLASH = /["\\]/;
const QUOTES_AND_BACKSLASHES = /["\\]/g;

/** The parameters with each array that pgArrayLiteral can write replaced by its literal. */
export function withArrayLiterals(params: readonly unknown[]): unknown[] {
  const out = params.slice();
  for (let i = 0; i < out.length; i++) {
    const p = out[i];
    if (Array.isArray(p)) out[i] = pgArrayLiteral(p) ?? p;
  }
  return out;
}
