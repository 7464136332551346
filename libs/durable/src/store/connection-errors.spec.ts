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

  it("recognises the mariadb driver's and MariaDB's (directly and through Prisma's adapter)", () => {
    const driverError = (code: string, errno: number, sqlState: string, message: string) =>
      Object.assign(new Error(message), { code, errno, sqlState, fatal: true });
    expect(isConnectionError(driverError('ER_SOCKET_UNEXPECTED_CLOSE', 45009, '08S01', 'socket has unexpectedly been closed'))).toBe(true);
    expect(isConnectionError(driverError('ER_GET_CONNECTION_TIMEOUT', 45028, 'HY000', 'retrieve connection from pool timeout'))).toBe(true);
    expect(isConnectionError(driverError('ER_CONNECTION_KILLED', 1927, '70100', 'Connection was killed'))).toBe(true);
    expect(isConnectionError(driverError('ER_SERVER_SHUTDOWN', 1053, '08S01', 'Server shutdown in progress'))).toBe(true);
    const viaPrisma = Object.assign(new Error('Raw query failed.'), {
      code: 'P2010',
      meta: { driverAdapterError: { cause: { originalCode: '2013' } } },
    });
    expect(isConnectionError(viaPrisma)).toBe(true);
    expect(isConnectionError(driverError('ER_DUP_ENTRY', 1062, '23000', "Duplicate entry 'x' for key 'PRIMARY'"))).toBe(false);
    expect(isConnectionError(driverError('ER_LOCK_DEADLOCK', 1213, '40001', 'Deadlock found'))).toBe(false);
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
