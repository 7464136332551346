import fc from 'fast-check';
import { decode, encode } from '../../libs/durable/src/codec/codec.js';
import { expected, storable } from '../support/storable-values.js';

const roundTrip = (v: unknown) => decode(JSON.parse(encode(v, { where: 'test' })));

describe('codec: property-based round trip', () => {
  it('decode(encode(v)) equals v for generated values', () => {
    fc.assert(
      fc.property(storable, (v) => {
        expect(roundTrip(v)).toEqual(expected(v));
      }),
      { numRuns: 500 },
    );
  });
});
