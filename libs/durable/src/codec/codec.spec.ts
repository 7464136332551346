import { decode, encode, errorToJson } from './codec.js';
import { PayloadTooLargeError, SerializationError } from '../errors/index.js';

const roundTrip = (v: unknown) => decode(JSON.parse(encode(v, { where: 'test' })));

describe('codec (lossless JSON)', () => {
  it('keeps plain JSON as it is (readable in SQL)', () => {
    const v = { a: 1, b: 'x', c: [true, null, { d: 2.5 }] };
    expect(encode(v, { where: 't' })).toBe(JSON.stringify(v));
    expect(roundTrip(v)).toEqual(v);
  });

  it('round-trips Date, BigInt, undefined, Map, Set, non-finite numbers and NUL strings', () => {
    const v = {
      when: new Date('2026-11-29T10:00:00.123Z'),
      invalid: new Date('nope'),
      big: -(2n ** 70n),
      list: [1, undefined, 3],
      map: new Map<unknown, unknown>([
        ['k', new Date(0)],
        [2, 'two'],
      ]),
      set: new Set(['a', 'b']),
      nums: [Number.NaN, Infinity, -Infinity, -0],
      nul: 'a\u0000b',
    };
    const out = roundTrip(v) as typeof v;
    expect(out.when).toEqual(v.when);
    expect(Number.isNaN(out.invalid.getTime())).toBe(true);
    expect(out.big).toBe(v.big);
    expect(out.list).toEqual([1, undefined, 3]);
    expect(out.list.length).toBe(3);
    expect(out.map).toEqual(v.map);
    expect(out.set).toEqual(v.set);
    expect(out.nums.slice(0, 3)).toEqual([Number.NaN, Infinity, -Infinity]);
    expect(out.nul).toBe('a\u0000b');
    expect(roundTrip(undefined)).toBeUndefined();
  });

  it('round-trips Errors with name, message, stack, cause and own fields', () => {
    const err = Object.assign(new TypeError('bad card', { cause: new Error('root') }), { code: 'E42' });
    const out = roundTrip(err) as Error & { code: string; cause: Error };
    expect(out).toBeInstanceOf(Error);
    expect(out.name).toBe('TypeError');
    expect(out.message).toBe('bad card');
    expect(out.stack).toBe(err.stack);
    expect(out.code).toBe('E42');
    expect(out.cause.message).toBe('root');
  });

  it('never confuses user data with its own tags', () => {
    const v = { $durable: 'Date', v: 'not a date' };
    expect(roundTrip(v)).toEqual(v);
  });

  it('names where and what for values it cannot store', () => {
    expect(() => encode({ a: { fn: () => 1 } }, { where: 'step "x"' })).toThrow(SerializationError);
    expect(() => encode({ a: { fn: () => 1 } }, { where: 'step "x"' })).toThrow(
      /step "x": cannot store the value at \$\.a\.fn: a function/,
    );
    const circular: Record<string, unknown> = { name: 'loop' };
    circular.self = circular;
    expect(() => encode(circular, { where: 'w' })).toThrow(/\$\.self: circular reference/);
    expect(() => encode([Symbol('s')], { where: 'w' })).toThrow(/\$\[0\]: a symbol/);
    expect(() => encode({ p: Promise.resolve(1) }, { where: 'w' })).toThrow(/forget an await/);
    // Shared (non-circular) references are fine.
    const shared = { x: 1 };
    expect(roundTrip({ a: shared, b: shared })).toEqual({ a: { x: 1 }, b: { x: 1 } });
  });

  it('enforces the payload limit in bytes', () => {
    expect(() => encode('é'.repeat(600), { where: 'input', maxBytes: 1000 })).toThrow(PayloadTooLargeError);
    expect(encode('e'.repeat(600), { where: 'input', maxBytes: 1000 })).toHaveLength(602);
  });

  it('turns anything thrown into an error object with name and message', () => {
    expect(errorToJson('oops')).toMatchObject({ name: 'NonErrorThrown', message: 'A non-Error value was thrown: oops' });
    expect(errorToJson({ code: 1 })).toMatchObject({ name: 'NonErrorThrown', message: 'A non-Error value was thrown: {"code":1}' });
    expect(errorToJson(new RangeError('r'), { step: 's' })).toMatchObject({ name: 'RangeError', message: 'r', step: 's' });
  });
});
