/**
 * Anything can be thrown: `null`, a symbol, an object without a prototype, an object whose
 * `toString` or `message` getter throws, a revoked Proxy (on which even `instanceof` throws). The
 * engine turns such values into text (logs, spans, the run's stored error) with the functions here,
 * which never throw, so no value a workflow throws can take the process down.
 */

/** Reads a property, or undefined when reading it throws. */
export function readSafely(value: unknown, key: string): unknown {
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

function attempt(describe: () => string | undefined): string | undefined {
  try {
    const text = describe();
    return typeof text === 'string' ? text : undefined;
  } catch {
    return undefined;
  }
}

/** A readable one-line description of any thrown value; never throws. */
export function describeThrown(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'symbol':
      return attempt(() => value.toString()) ?? 'a symbol';
    case 'object':
    case 'function':
      break;
    default:
      return String(value); // number, bigint, boolean, undefined
  }
  if (value === null) return 'null';
  const message = readSafely(value, 'message');
  if (typeof message === 'string') {
    const name = readSafely(value, 'name');
    return typeof name === 'string' && name && name !== 'Error' ? `${name}: ${message}` : message;
  }
  return (
    attempt(() => JSON.stringify(value)) ??
    attempt(() => String(value)) ??
    attempt(() => Object.prototype.toString.call(value)) ??
    'a value that cannot be read (every way of reading it threw: a revoked Proxy?)'
  );
}

/** Thrown in place of a value the engine could not even inspect (see normalizeThrown). */
export class UninspectableThrownError extends Error {
  constructor(description: string) {
    super(`A value that cannot be inspected was thrown: ${description}`);
    this.name = 'NonErrorThrown';
  }
}

/**
 * What the engine keeps of a value thrown by workflow or step code: the value itself when the engine
 * can safely look at it (an Error whose name, message and stack read as strings, or any value
 * `instanceof` and JSON.stringify accept), else an UninspectableThrownError describing it.
 */
export function normalizeThrown(value: unknown): unknown {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return value;
  try {
    if (value instanceof Error) {
      const { name, message, stack } = value;
      if (typeof name === 'string' && typeof message === 'string' && (stack === undefined || typeof stack === 'string')) return value;
    } else {
      JSON.stringify(value);
      String(value);
      return value;
    }
  } catch {
    // fall through: the engine cannot look at it
  }
  return new UninspectableThrownError(describeThrown(value));
}

/** Calls user code and rethrows what it throws (synchronously or as a rejection) through normalizeThrown. */
export function callUserCode<T>(fn: () => T): T {
  let result: T;
  try {
    result = fn();
  } catch (err) {
    throw normalizeThrown(err);
  }
  if (result instanceof Promise) return result.catch((err: unknown) => Promise.reject(normalizeThrown(err))) as T;
  return result;
}
