import { describeThrown, readSafely } from './describe-thrown.js';

/**
 * A one-line description of anything thrown, for logs. Multi-line messages (Prisma's start with
 * a line break) are joined into one line; errors without a message (`throw new Error()`, some
 * driver errors) are described by their cause, kind or name instead of an empty string.
 */
export function errorText(err: unknown, depth = 0): string {
  if (err === null || typeof err !== 'object') return describeThrown(err);
  const [name, message, code, cause, kind] = ['name', 'message', 'code', 'cause', 'kind'].map((k) => readSafely(err, k));
  if (message === undefined && name === undefined && cause === undefined && kind === undefined) return describeThrown(err);
  let text = typeof message === 'string' ? message.trim().replace(/\s*\n\s*/g, ' ') : '';
  if (!text && cause !== undefined && depth < 3) text = errorText(cause, depth + 1);
  if (!text && typeof kind === 'string') text = kind;
  if (!text) text = `${typeof name === 'string' && name ? name : 'error'} without a message`;
  return typeof code === 'string' && !text.includes(code) ? `${text} (${code})` : text;
}
