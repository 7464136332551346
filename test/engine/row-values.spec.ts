import { insertValues, MAX_VALUES_ROWS, valuesInserts } from '../../libs/durable/src/store/row-values.js';
import { pgSqlClient } from '../../libs/durable/src/store/sql-client.js';
import { EngineHarness } from '../support/engine-harness.js';

/**
 * The rows distributed mode inserts with statements of their own (store/row-values.ts): a few as a
 * VALUES list, many from arrays. Both forms must store the same values, every type and null included.
 */
describe('store: rows inserted as VALUES or from arrays', () => {
  let h: EngineHarness;
  beforeAll(async () => {
    h = await EngineHarness.create('row_values');
    await h.query(`CREATE TABLE row_values_probe (id text PRIMARY KEY, n int, doc jsonb, at timestamptz, tags text[], flag boolean,
                   due timestamptz, note text)`);
  });
  afterAll(() => h.close());

  const HEAD = 'INSERT INTO row_values_probe (id, n, doc, at, tags, flag, due, note)';
  const COLUMNS = [
    '?',
    '?::int',
    '?::jsonb',
    '?::timestamptz',
    '?::text[]',
    '?::boolean',
    `now() + ?::float8 * interval '1 second'`,
    `'fixed'`,
  ];
  const row = (id: string, i: number) => [
    id,
    i % 3 === 0 ? null : i,
    i % 4 === 0 ? null : JSON.stringify({ i, text: `it's "${i}"` }),
    i % 5 === 0 ? null : new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
    i % 6 === 0 ? null : i % 2 ? [] : [`t${i}`, 'with, comma', 'with "quote"'],
    i % 7 === 0 ? null : i % 2 === 0,
    i % 8 === 0 ? null : 60,
  ];
  const read = async (prefix: string) =>
    (
      await h.query<Record<string, unknown>>(
        `SELECT substr(id, length($1) + 1) AS k, n, doc, at, tags, flag, due > now() AS later, note FROM row_values_probe WHERE id LIKE $1 || '%' ORDER BY k`,
        [prefix],
      )
    ).map((r) => ({ ...r, k: r.k as string, tags: r.tags }));

  it('sends a few rows as one VALUES list and many as arrays, and both store the same values', async () => {
    const few = Array.from({ length: MAX_VALUES_ROWS }, (_, i) => row(`few-${String(i).padStart(3, '0')}`, i));
    const many = Array.from({ length: MAX_VALUES_ROWS + 1 }, (_, i) => row(`many-${String(i).padStart(3, '0')}`, i));
    expect(valuesInserts(HEAD, COLUMNS, few)[0].text).toMatch(/ VALUES \(/);
    expect(valuesInserts(HEAD, COLUMNS, many)[0].text).toMatch(/ SELECT .* FROM unnest\(/);
    const sql = pgSqlClient(h.pool, { prepared: false });
    const inserted = await insertValues<{ id: string }>(sql, HEAD, COLUMNS, [...few], 'RETURNING id');
    expect(inserted).toHaveLength(MAX_VALUES_ROWS);
    await insertValues(sql, HEAD, COLUMNS, many);
    const a = await read('few-');
    const b = (await read('many-')).slice(0, MAX_VALUES_ROWS);
    expect(b).toEqual(a);
    expect(a.find((r) => r.k === '001')).toMatchObject({
      n: 1,
      doc: { i: 1, text: `it's "1"` },
      tags: [],
      flag: false,
      later: true,
      note: 'fixed',
    });
    expect(a.find((r) => r.k === '002')?.tags).toEqual(['t2', 'with, comma', 'with "quote"']);
    expect(a.find((r) => r.k === '000')).toMatchObject({ n: null, doc: null, at: null, tags: null, flag: null, later: null });
  });

  it('refuses a row whose values do not match the parameters, before sending anything', () => {
    expect(() => valuesInserts(HEAD, COLUMNS, [['only-an-id']])).toThrow(/1 values for 7 parameters/);
  });
});
