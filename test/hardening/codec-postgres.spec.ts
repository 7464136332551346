import fc from 'fast-check';
import pg from 'pg';
import { decode, encode } from '../../libs/durable/src/codec/codec.js';
import { expected, storable } from '../support/storable-values.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/** The codec through a real jsonb column: what Postgres accepts and gives back is what the engine reads. */
describe('codec through Postgres jsonb (property-based)', () => {
  let db: TestDatabase;
  let client: pg.Client;
  beforeAll(async () => {
    db = await createTestDatabase('codec_jsonb');
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    await client.query('CREATE TABLE stored (id serial PRIMARY KEY, v jsonb NOT NULL)');
  });
  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  it('stores every generated value and reads back the same value', async () => {
    await fc.assert(
      fc.asyncProperty(storable, async (v) => {
        const { rows } = await client.query<{ v: unknown }>('INSERT INTO stored (v) VALUES ($1::jsonb) RETURNING v', [
          encode(v, { where: 'test' }),
        ]);
        expect(decode(rows[0].v)).toEqual(expected(v));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps a long NUL string and a lone surrogate, which jsonb text cannot hold', async () => {
    for (const v of [`${'x'.repeat(130_000)}\u0000end`, 'lone \ud800 surrogate', { deep: ['\udfff\u0000'] }]) {
      const { rows } = await client.query<{ v: unknown }>('INSERT INTO stored (v) VALUES ($1::jsonb) RETURNING v', [
        encode(v, { where: 'test' }),
      ]);
      expect(decode(rows[0].v)).toEqual(v);
    }
  });
});
