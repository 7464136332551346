import { describeThrown, readSafely } from '../errors/describe-thrown.js';
import { PayloadTooLargeError, SerializationError } from '../errors/index.js';

/**
 * Lossless JSON for everything a workflow stores (inputs, outputs, step results, messages).
 *
 * Plain JSON values are stored as they are, so they stay readable and queryable in SQL.
 * Values JSON cannot represent are stored as tagged objects `{ "$durable": <tag>, "v": … }`:
 *   Date → "Date" (ISO string; an invalid Date keeps NaN), BigInt → "BigInt" (decimal string),
 *   undefined → "undefined" (also inside arrays; object keys whose value is undefined are
 *   dropped, as JSON does), Map → "Map" (entries), Set → "Set" (values), Error → "Error"
 *   (name, message, stack, cause and own enumerable fields), non-finite numbers and -0 → "Number",
 *   strings containing U+0000 (which Postgres jsonb rejects) → "String" (the parts between the
 *   NULs; rows written before stored code points, still read), strings with a lone surrogate
 *   (not valid Unicode, also rejected by jsonb) → "UTF16" (base64 of the UTF-16 code units).
 * A plain object that itself has a "$durable" key is wrapped as "Object", so user data never
 * collides with a tag. Class instances are stored as their own enumerable fields (as JSON
 * does) and come back as plain objects. Functions, symbols and circular references are a
 * SerializationError naming where the value came from and the path inside it, and so is a value
 * nested deeper than MAX_NESTING: everything written can be read back without unbounded recursion.
 * Keys such as `__proto__` are stored and read back as plain own properties, never as prototypes.
 */
const TAG = '$durable';

/** String.prototype.isWellFormed (Node 20+), not yet in the compiler's lib: no lone surrogate in the string. */
type WellFormedCheck = string & { isWellFormed(): boolean };

/** How deep objects and arrays may nest in a stored value (a deeper one is a SerializationError at write time). */
export const MAX_NESTING = 256;

/** A path for messages: long ones (deep values) are cut in the middle. */
function shortPath(path: string): string {
  return path.length <= 120 ? path : `${path.slice(0, 60)}…${path.slice(-50)}`;
}

/** Sets an own property, `__proto__` included (a plain assignment of that key would replace the prototype). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

export interface EncodeOptions {
  /** Where the value comes from, for error messages: e.g. `step "charge" of run 123`. */
  where: string;
  /** Maximum size of the JSON text in bytes; 0 or undefined = no limit. */
  maxBytes?: number;
}

/** Encodes a value to JSON text for a jsonb parameter. */
export function encode(value: unknown, opts: EncodeOptions): string {
  const json = JSON.stringify(toJson(value, opts.where, '$', new Set()));
  if (json === undefined) throw new SerializationError(opts.where, '$', 'the value has no JSON form');
  if (opts.maxBytes && json.length > opts.maxBytes / 4) {
    // Only count bytes when the text may be over the limit (length ≤ bytes ≤ 4 × length).
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes > opts.maxBytes) throw new PayloadTooLargeError(opts.where, bytes, opts.maxBytes);
  }
  return json;
}

function toJson(value: unknown, where: string, path: string, ancestors: Set<object>): unknown {
  switch (typeof value) {
    case 'string':
      if (!(value as WellFormedCheck).isWellFormed()) return { [TAG]: 'UTF16', v: Buffer.from(value, 'utf16le').toString('base64') };
      return value.includes('\u0000') ? { [TAG]: 'String', v: value.split('\u0000') } : value;
    case 'number':
      if (Object.is(value, -0)) return { [TAG]: 'Number', v: '-0' };
      return Number.isFinite(value) ? value : { [TAG]: 'Number', v: String(value) };
    case 'boolean':
      return value;
    case 'undefined':
      return { [TAG]: 'undefined' };
    case 'bigint':
      return { [TAG]: 'BigInt', v: value.toString() };
    case 'function':
      throw new SerializationError(where, path, 'a function is not data');
    case 'symbol':
      throw new SerializationError(where, path, 'a symbol is not data');
  }
  if (value === null) return null;
  const obj = value as object;
  if (ancestors.has(obj)) throw new SerializationError(where, shortPath(path), 'circular reference');
  if (ancestors.size >= MAX_NESTING) {
    throw new SerializationError(where, shortPath(path), `objects and arrays nest deeper than ${MAX_NESTING} levels; flatten the value`);
  }
  ancestors.add(obj);
  try {
    return objectToJson(obj, where, path, ancestors);
  } finally {
    ancestors.delete(obj);
  }
}

function objectToJson(obj: object, where: string, path: string, ancestors: Set<object>): unknown {
  if (obj instanceof Date) return { [TAG]: 'Date', v: Number.isNaN(obj.getTime()) ? null : obj.toISOString() };
  if (Array.isArray(obj)) return obj.map((v, i) => toJson(v, where, `${path}[${i}]`, ancestors));
  if (obj instanceof Map) {
    return {
      [TAG]: 'Map',
      v: Array.from(obj, ([k, v], i) => [
        toJson(k, where, `${path}.<key ${i}>`, ancestors),
        toJson(v, where, `${path}.<value ${i}>`, ancestors),
      ]),
    };
  }
  if (obj instanceof Set) {
    return { [TAG]: 'Set', v: Array.from(obj, (v, i) => toJson(v, where, `${path}.<item ${i}>`, ancestors)) };
  }
  if (obj instanceof Error) return { [TAG]: 'Error', v: errorFields(obj, where, path, ancestors) };
  if (ArrayBuffer.isView(obj) || obj instanceof ArrayBuffer) {
    throw new SerializationError(where, path, 'binary data (Buffer, typed arrays) is not supported; encode it as base64');
  }
  if (obj instanceof Promise) throw new SerializationError(where, path, 'a Promise is not data (did you forget an await?)');
  if (obj instanceof WeakMap || obj instanceof WeakSet) throw new SerializationError(where, path, 'weak collections are not data');
  const toJSON = (obj as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return toJson(toJSON.call(obj), where, path, ancestors);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (v === undefined) continue;
    setOwn(out, k, toJson(v, where, `${path}.${k}`, ancestors));
  }
  return Object.prototype.hasOwnProperty.call(out, TAG) ? { [TAG]: 'Object', v: out } : out;
}

function errorFields(err: Error, where: string, path: string, ancestors: Set<object>): Record<string, unknown> {
  const text = (key: string) => {
    const v = readSafely(err, key);
    return typeof v === 'string' ? v : undefined;
  };
  const fields: Record<string, unknown> = { name: text('name') ?? 'Error', message: text('message') ?? describeThrown(err) };
  const stack = text('stack');
  if (stack) fields.stack = stack;
  for (const [k, v] of Object.entries(err)) {
    if (k in fields || v === undefined || typeof v === 'function') continue;
    fields[k] = toJson(v, where, `${path}.${k}`, ancestors);
  }
  const cause = readSafely(err, 'cause');
  if (cause !== undefined) fields.cause = toJson(cause, where, `${path}.cause`, ancestors);
  return fields;
}

/**
 * Decodes a value read from a jsonb column (already parsed by the driver) or JSON text. A value too
 * deep to decode (never one this codec wrote: see MAX_NESTING) is a SerializationError, not a crash.
 */
export function decode(stored: unknown): unknown {
  try {
    return decodeValue(stored);
  } catch (err) {
    if (err instanceof RangeError) throw new SerializationError('a stored value', '$', `it cannot be decoded (${err.message})`);
    throw err;
  }
}

function decodeValue(stored: unknown): unknown {
  if (stored === null || typeof stored !== 'object') return stored;
  if (Array.isArray(stored)) return stored.map(decodeValue);
  const obj = stored as Record<string, unknown>;
  const tag = obj[TAG];
  if (typeof tag === 'string') {
    const v = obj.v;
    switch (tag) {
      case 'undefined':
        return undefined;
      case 'Date':
        return new Date(v === null ? Number.NaN : (v as string));
      case 'BigInt':
        return BigInt(v as string);
      case 'Number':
        return Number(v);
      case 'String':
        return decodeNulString(v as Array<string | number>);
      case 'UTF16':
        return Buffer.from(v as string, 'base64').toString('utf16le');
      case 'Map':
        return new Map((v as [unknown, unknown][]).map(([k, val]) => [decodeValue(k), decodeValue(val)]));
      case 'Set':
        return new Set((v as unknown[]).map(decodeValue));
      case 'Error':
        return reviveError(v as Record<string, unknown>);
      case 'Object':
        return decodeFields(v as Record<string, unknown>);
    }
  }
  return decodeFields(obj);
}

function decodeFields(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) setOwn(out, k, decodeValue(v));
  return out;
}

/** A string with NULs: its parts (written now), or its code points (rows written by earlier versions), in bounded chunks. */
function decodeNulString(v: Array<string | number>): string {
  if (v.length === 0 || typeof v[0] === 'string') return (v as string[]).join('\u0000');
  const chunks: string[] = [];
  for (let i = 0; i < v.length; i += 4096) chunks.push(String.fromCodePoint(...(v.slice(i, i + 4096) as number[])));
  return chunks.join('');
}

/** Rebuilds an Error from stored fields: same name, message, stack and extra fields. */
export function reviveError(fields: Record<string, unknown>): Error {
  const err = new Error(String(fields.message ?? ''));
  for (const [k, v] of Object.entries(fields)) {
    if (k === 'message') continue;
    Object.defineProperty(err, k, { value: decode(v), enumerable: k !== 'stack' && k !== 'name', writable: true, configurable: true });
  }
  return err;
}

/**
 * The JSON stored in a run's or step's `error` column: always an object with name and message,
 * whatever was thrown (a string, a plain object, an Error subclass).
 */
export function errorToJson(err: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  let base: Record<string, unknown>;
  if (isError(err)) {
    const [name, message, stack, code] = ['name', 'message', 'stack', 'code'].map((k) => readSafely(err, k));
    base = {
      name: typeof name === 'string' ? name : 'Error',
      message: typeof message === 'string' ? message : describeThrown(err),
      stack: typeof stack === 'string' ? stack : undefined,
    };
    if (typeof code === 'string' || typeof code === 'number') base.code = code;
  } else {
    const text = typeof err === 'string' || typeof err === 'symbol' || typeof err !== 'object' ? describeThrown(err) : jsonOrDescribed(err);
    base = { name: 'NonErrorThrown', message: `A non-Error value was thrown: ${text}` };
  }
  return { ...base, ...extra };
}

/** `instanceof Error`, false where even that throws (a revoked Proxy). */
function isError(value: unknown): value is Error {
  try {
    return value instanceof Error;
  } catch {
    return false;
  }
}

function jsonOrDescribed(value: unknown): string {
  try {
    return JSON.stringify(value) ?? describeThrown(value);
  } catch {
    return describeThrown(value);
  }
}
