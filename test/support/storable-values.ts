import fc from 'fast-check';

/** Generated values of every kind the codec promises to keep. */
export const storable = fc.letrec((tie) => ({
  value: fc.oneof(
    { maxDepth: 4 },
    fc.string({ unit: 'binary' }),
    fc.string({ unit: fc.constantFrom('a', '\u0000', '\ud800', '\udc00', '😀', 'é') }),
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.bigInt(),
    fc.date({ noInvalidDate: true }), // an invalid Date round-trips too (codec.spec.ts), but NaN !== NaN for toEqual
    tie('array'),
    tie('object'),
    tie('map'),
    tie('set'),
  ),
  array: fc.array(tie('value'), { maxLength: 5 }),
  object: fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('__proto__', 'constructor', '$durable', 'toString')), tie('value'), {
    maxKeys: 5,
  }),
  map: fc.array(fc.tuple(tie('value'), tie('value')), { maxLength: 3 }).map((e) => new Map(e)),
  set: fc.array(tie('value'), { maxLength: 3 }).map((e) => new Set(e)),
})).value;

/** What the codec promises: the same value, except object keys whose value is undefined are dropped (as JSON does). */
export function expected(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(expected);
  if (v instanceof Map) return new Map([...v].map(([k, x]) => [expected(k), expected(x)]));
  if (v instanceof Set) return new Set([...v].map(expected));
  if (v === null || typeof v !== 'object' || v instanceof Date) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    if (x === undefined) continue;
    Object.defineProperty(out, k, { value: expected(x), enumerable: true, writable: true, configurable: true });
  }
  return out;
}
