import { errorText } from './error-text.js';

describe('errorText', () => {
  it('uses the message, and adds a code the message does not name', () => {
    expect(errorText(Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' }))).toBe('connection refused (ECONNREFUSED)');
    expect(errorText(Object.assign(new Error('Code: `57P01` terminating'), { code: '57P01' }))).toBe('Code: `57P01` terminating');
  });

  it('joins a multi-line message (as Prisma writes them) into one line', () => {
    const prismaLike = new Error(
      '\nInvalid `prisma.$executeRaw()` invocation:\n\n\nRaw query failed. Code: `57P01`. Message: `terminating connection`',
    );
    expect(errorText(prismaLike)).toBe(
      'Invalid `prisma.$executeRaw()` invocation: Raw query failed. Code: `57P01`. Message: `terminating connection`',
    );
  });

  it('describes errors without a message by their cause, kind or name', () => {
    expect(errorText(Object.assign(new Error(''), { cause: new Error('socket hang up') }))).toBe('socket hang up');
    expect(errorText(Object.assign(new Error(''), { name: 'DriverAdapterError', cause: { kind: 'ConnectionClosed' } }))).toBe(
      'ConnectionClosed',
    );
    expect(errorText(Object.assign(new Error(''), { name: 'DriverAdapterError' }))).toBe('DriverAdapterError without a message');
  });

  it('prints what is not an error as it is', () => {
    expect(errorText('plain string')).toBe('plain string');
    expect(errorText(42)).toBe('42');
    expect(errorText(undefined)).toBe('undefined');
  });
});
