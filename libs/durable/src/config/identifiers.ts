import { describeThrown } from '../errors/describe-thrown.js';
import { InvalidArgumentError } from '../errors/index.js';

/**
 * Identifiers (run ids, tags, queue and workflow names, message topics, idempotency and event keys)
 * are printed by the CLI, the dashboard and logs, and matched exactly in SQL: characters that are
 * invisible or act on a terminal or on text direction are refused in them.
 */
const FORBIDDEN =
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  /[\u0000-\u001F\u007F-\u009F\u2028\u2029\u202A-\u202E\u2066-\u2069]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const FORBIDDEN_ALL = new RegExp(FORBIDDEN.source, 'g');

/** What an identifier may contain, for error messages. */
export const IDENTIFIER_CHARACTERS =
  'printable characters only: no control characters (U+0000–U+001F, U+007F–U+009F, e.g. newline, tab, ESC), ' +
  'line or paragraph separators (U+2028, U+2029), bidirectional controls (U+202A–U+202E, U+2066–U+2069) or lone surrogates';

const hex = (c: string) => `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;

/** The first character an identifier may not contain, as "U+001B at position 3", or null if there is none. */
export function forbiddenCharacter(v: string): string | null {
  const m = FORBIDDEN.exec(v);
  return m ? `${hex(m[0])} at position ${m.index}` : null;
}

/** A value for an error message (never throws): JSON, with every forbidden character escaped as \uXXXX, clipped to 80 characters. */
export function showIdentifier(v: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(v) ?? describeThrown(v);
  } catch {
    text = describeThrown(v); // a BigInt, a circular object, a throwing toJSON
  }
  text = text.replace(FORBIDDEN_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

/**
 * Refuses an identifier (already known to be a string) that contains a forbidden character:
 * InvalidArgumentError naming the call, the field and what is allowed.
 */
export function checkIdentifierCharacters(api: string, field: string, v: string): string {
  const bad = forbiddenCharacter(v);
  if (bad) {
    throw new InvalidArgumentError(`${api}: the ${field} ${showIdentifier(v)} contains ${bad}; use ${IDENTIFIER_CHARACTERS}.`, field);
  }
  return v;
}
