import { PayloadTooLargeError, SerializationError } from '../errors/index.js';

/**
 * Lossless JSON for everything a workflow stores (inputs, outputs, step results, messages).
 *
 * Plain JSON values are stored as they are, so they stay readable and queryable in SQL.
 * Values JSON cannot represent are stored as tagged objects `{ "$durable": <tag>, "v": … }`:
 *   Date → "Date" (ISO string; an invalid Date keeps NaN), BigInt → "BigInt" (decimal string),
 *   undefined → "undefined" (also inside arrays; object keys whose value is undefined are
 *   dropped, as JSON does), Map → "Map" (entries), Set → "Set" (values), Error → "Error"
 *   (name, message, stack, cause and own enumerable fields), non-finite numbers → "Number",
 *   strings containing U+0000 (which Postgres jsonb rejects) → "String" (code points).
 * A plain object that itself has a "$durable" key is wrapped as "Object", so user data never
 * collides with a tag. Class instances are stored as their own enumerable fields (as JSON
 * does) and come back as plain objects. Functions, symbols and circular references are a
 * SerializationError naming where the value came from and the path inside it.
 */
const TAG = '$durable';

export interface EncodeOptions {
  /** Where the value comes from, for error messages: e.g. `step "charge" of run 123`. */
  where: string;
  /** Maximum size of the JSON text in bytes; 0 or undefined = no limit. */
  maxBytes?: number;
}

/** Encodes a value to JSON text for a jsonb parameter. */
export function encode(value: unknown, opts: EncodeOptions): string {
  const json = JSON.stringify(toJson(value, opts.where, '$', new Set()));
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
      return value.includes('\u0000') ? { [TAG]: 'String', v: Array.from(value, (c) => c.codePointAt(0)) } : value;
    case 'number':
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
  if (ancestors.has(obj)) throw new SerializationError(where, path, 'circular reference');
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
    out[k] = toJson(v, where, `${path}.${k}`, ancestors);
  }
  return Object.prototype.hasOwnProperty.call(out, TAG) ? { [TAG]: 'Object', v: out } : out;
}

function errorFields(err: Error, where: string, path: string, ancestors: Set<object>): Record<string, unknown> {
  const fields: Record<string, unknown> = { name: err.name, message: err.message };
  if (err.stack) fields.stack = err.stack;
  for (const [k, v] of Object.entries(err)) {
    if (k in fields || v === undefined || typeof v === 'function') continue;
    fields[k] = toJson(v, where, `${path}.${k}`, ancestors);
  }
  if (err.cause !== undefined) fields.cause = toJson(err.cause, where, `${path}.cause`, ancestors);
  return fields;
}

/** Decodes a value read from a jsonb column (already parsed by the driver) or JSON text. */
export function decode(stored: unknown): unknown {
  if (stored === null || typeof stored !== 'object') return stored;
  if (Array.isArray(stored)) return stored.map(decode);
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
        return String.fromCodePoint(...(v as number[]));
      case 'Map':
        return new Map((v as [unknown, unknown][]).map(([k, val]) => [decode(k), decode(val)]));
      case 'Set':
        return new Set((v as unknown[]).map(decode));
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
  for (const [k, v] of Object.entries(obj)) out[k] = decode(v);
  return out;
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
  if (err instanceof Error) {
    base = { name: err.name, message: err.message, stack: err.stack };
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' || typeof code === 'number') base.code = code;
  } else {
    let message: string;
    try {
      message = typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err));
    } catch {
      message = String(err);
    }
    base = { name: 'NonErrorThrown', message: `A non-Error value was thrown: ${message}` };
  }
  return { ...base, ...extra };
}
