import { isConnectionError, meansServerGone } from './connection-errors.js';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isConnectionError', () => {
  it('recognises socket, Postgres and Prisma codes of an unreachable or full database', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', '57P01', '57P03', '08006', '53300', 'P1001', 'P1017', '25006', 'NO_PRIMARY']) {
      expect(isConnectionError(withCode(code))).toBe(true);
    }
  });

  it('recognises them in Prisma messages and in causes', () => {
    expect(isConnectionError(withCode('P2010', 'Raw query failed. Code: `53300`. Message: `sorry, too many clients already`'))).toBe(true);
    expect(isConnectionError(new Error('wrapped', { cause: withCode('ECONNRESET') }))).toBe(true);
    expect(
      isConnectionError(withCode('P2010', 'Raw query failed. Code: `25006`. Message: `cannot execute INSERT in a read-only transaction`')),
    ).toBe(true);
    expect(isConnectionError(new Error('remaining connection slots are reserved for non-replication superuser connections'))).toBe(true);
  });

  it('does not take a failed statement for a connection problem', () => {
    for (const err of [
      withCode('23505', 'duplicate key'),
      withCode('40001', 'could not serialize'),
      withCode('P2002'),
      new Error('boom'),
      'text',
      null,
    ]) {
      expect(isConnectionError(err)).toBe(false);
    }
  });
});

describe('meansServerGone', () => {
  it('retires connections to a server that became a standby, shuts down or broke the connection', () => {
    for (const code of ['25006', '57P01', '57P02', '57P03', '08006', '08P01']) expect(meansServerGone(code)).toBe(true);
  });

  it('keeps connections whose statement failed for its own reasons', () => {
    for (const code of ['23505', '40001', '40P01', '57014', '53300', undefined, 7]) expect(meansServerGone(code)).toBe(false);
  });
});
