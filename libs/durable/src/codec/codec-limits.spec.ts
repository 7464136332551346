import { SerializationError } from '../errors/index.js';
import { decode, encode, MAX_NESTING } from './codec.js';

const roundTrip = (v: unknown) => decode(JSON.parse(encode(v, { where: 'test' })));

/** A value nested `depth` levels deep: { a: { a: … } }. */
function nested(depth: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
}

describe('codec: everything it writes it reads back', () => {
  it('round-trips a 200,000-character string with NULs (stored as the parts between them)', () => {
    const long = `${'x'.repeat(100_000)}\u0000${'y'.repeat(99_999)}\u0000`;
    expect(roundTrip(long)).toBe(long);
    expect(JSON.parse(encode('a\u0000b', { where: 't' }))).toEqual({ $durable: 'String', v: ['a', 'b'] });
  });

  it('still reads NUL strings stored as code points, however long', () => {
    const long = `${'é'.repeat(150_000)}\u0000😀`;
    const stored = { $durable: 'String', v: Array.from(long, (c) => c.codePointAt(0)) };
    expect(decode(stored)).toBe(long);
  });

  it('round-trips lone surrogates, which Postgres jsonb refuses as text', () => {
    for (const s of ['\ud800', 'a\udc00b', '\udbff\u0000x']) {
      expect(encode(s, { where: 't' })).not.toMatch(/\\ud[89a-f]/i);
      expect(roundTrip(s)).toBe(s);
    }
  });

  it(`refuses a value nested deeper than ${MAX_NESTING} levels at write time, naming where, and keeps ${MAX_NESTING}`, () => {
    expect(roundTrip(nested(MAX_NESTING))).toEqual(nested(MAX_NESTING));
    for (const depth of [MAX_NESTING + 1, 100_000]) {
      const err = (() => {
        try {
          encode(nested(depth), { where: 'input of run r1' });
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(SerializationError);
      expect((err as Error).message).toMatch(/^input of run r1: cannot store the value at \$\.a\.a.*nest deeper than 256 levels/);
      expect((err as Error).message.length).toBeLessThan(600);
    }
  });

  it('decodes a stored value too deep to decode as a SerializationError, not a RangeError', () => {
    const deep = JSON.parse(`${'['.repeat(200_000)}${']'.repeat(200_000)}`);
    expect(() => decode(deep)).toThrow(SerializationError);
  });

  it('round-trips large arrays', () => {
    const big = Array.from({ length: 300_000 }, (_, i) => i);
    expect(roundTrip(big)).toEqual(big);
  });

  it('decodes __proto__, constructor and prototype keys as plain own properties', () => {
    const stored = JSON.parse('{"__proto__":{"isAdmin":true},"constructor":{"prototype":1},"name":"x"}');
    const out = decode(stored) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect((out as { isAdmin?: unknown }).isAdmin).toBeUndefined();
    expect(Object.keys(out)).toEqual(['__proto__', 'constructor', 'name']);
    expect(Object.getOwnPropertyDescriptor(out, '__proto__')?.value).toEqual({ isAdmin: true });
    expect(roundTrip(out)).toEqual(out);
    expect(Object.keys(roundTrip(out) as object)).toEqual(['__proto__', 'constructor', 'name']);
  });
});
