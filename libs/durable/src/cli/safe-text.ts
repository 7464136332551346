/**
 * Text from the database (run ids, tags, workflow names, error messages) printed to a terminal:
 * control characters are shown as escapes, so an id holding ESC, BEL or a line break can neither
 * drive the terminal (clear the screen, set the window title) nor break a table's rows.
 */

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\\': '\\\\' };

/**
 * C0 and C1 controls, DEL, and the characters that reorder or hide text (line/paragraph separators,
 * bidi overrides and isolates, zero-width and BOM).
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200f\ufeff]/g;

const HAS_UNSAFE = new RegExp(UNSAFE.source);
/** What JSON.stringify leaves raw (it escapes C0 controls in strings; its own line breaks are layout). */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200f\ufeff]/g;

const hex = (c: string) => {
  const n = c.charCodeAt(0);
  return n <= 0xff ? `\\x${n.toString(16).padStart(2, '0')}` : `\\u${n.toString(16).padStart(4, '0')}`;
};

/**
 * One line of plain text: `\x1b`, `\n`, `\u202e` … written out. Text without such characters is
 * printed as it is (an id can be copied back); in escaped text a backslash is doubled, so an escape
 * and the same characters typed literally cannot be confused.
 */
export function safeText(text: unknown): string {
  const s = String(text ?? '');
  if (!HAS_UNSAFE.test(s)) return s;
  return s.replace(/\\/g, '\\\\').replace(UNSAFE, (c) => NAMED[c] ?? hex(c));
}

/**
 * JSON for the terminal: JSON.stringify escapes C0 controls but not DEL, C1 controls (0x9b is a
 * terminal's CSI) or the separators; those become \u escapes, which JSON readers decode as before.
 */
export function safeJson(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(UNSAFE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
