import { createRequire } from 'node:module';
import { pgArrayLiteral, withArrayLiterals } from './pg-arrays.js';

// node-postgres's own conversion of a parameter (what it sends for a JS array), to compare with.
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils.js') as { prepareValue: (v: unknown) => unknown };

describe('pgArrayLiteral', () => {
  const cases: unknown[][] = [
    [],
    ['a'],
    ['run-1', 'run-2:child', ''],
    [null, 'x', undefined],
    ['"quoted"', 'back\\slash', '{braces},commas', 'NULL', ' spaced ', 'ünïcödé ✓', '\\"both"\\'],
    ['{"$durable":"Date","v":"2026-01-01T00:00:00.000Z"}', '{"message":"a \\"b\\""}'],
    [1, 0, -3, 2.5, 1e21, NaN, Infinity],
    [true, false, null],
    [10n, -1n],
  ];
  it.each(cases.map((c) => [c]))('writes %j as node-postgres does', (values) => {
    expect(pgArrayLiteral(values)).toBe(prepareValue(values));
  });

  it('leaves arrays of anything else to node-postgres', () => {
    expect(pgArrayLiteral([new Date(0)])).toBeUndefined();
    expect(pgArrayLiteral([['nested']])).toBeUndefined();
    expect(pgArrayLiteral([Buffer.from('x')])).toBeUndefined();
    expect(pgArrayLiteral([{ a: 1 }])).toBeUndefined();
    const date = [new Date(0)];
    const params = withArrayLiterals(['plain', 3, date, ['a', null], null]);
    expect(params).toEqual(['plain', 3, date, '{"a",NULL}', null]);
    expect(params[2]).toBe(date);
  });
});
