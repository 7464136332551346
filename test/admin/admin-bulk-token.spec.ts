import { BulkTokenError, BulkTokens, type BulkToken } from '../../libs/durable/src/admin/bulk-token.js';

const token = (over: Partial<BulkToken> = {}): Omit<BulkToken, 'filter'> => ({
  action: 'cancel',
  query: { idPrefix: 'A-' },
  compensate: false,
  position: { asOf: new Date('2026-01-01T00:00:00.000Z'), cursor: null },
  matched: 3,
  capped: false,
  done: 0,
  skipped: 0,
  ...over,
});

const refusal = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    if (e instanceof BulkTokenError) return { reason: e.reason, status: e.status, parameter: e.parameter };
    throw e;
  }
  throw new Error('not refused');
};

/** The signed bulk token: bound to its action, filter, cut-off and count; expires; single use. */
describe('bulk tokens', () => {
  const SECRET = 'k'.repeat(32);

  it('opens a token it signed, with everything it binds', () => {
    const tokens = new BulkTokens(SECRET);
    const { token: t } = tokens.open(tokens.sign(token()), null);
    expect(t).toMatchObject({ action: 'cancel', query: { idPrefix: 'A-' }, matched: 3, capped: false, done: 0 });
    expect(t.position.asOf.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(t.filter.idPrefix).toBe('A-');
  });

  it('refuses a token whose payload was edited (filter, cut-off, count or action), in any byte', () => {
    const tokens = new BulkTokens(SECRET);
    const signed = tokens.sign(token({ matched: 0 }));
    const [body, sig] = signed.split('.');
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    for (const edit of [{ q: {} }, { t: '9999-12-31T00:00:00.000Z' }, { n: 1000 }, { a: 'delete' }, { x: true }]) {
      const forged = `${Buffer.from(JSON.stringify({ ...payload, ...edit })).toString('base64url')}.${sig}`;
      expect(refusal(() => tokens.open(forged, null))).toEqual({ reason: 'altered', status: 400, parameter: 'token' });
    }
    expect(refusal(() => tokens.open(`${body}.${sig.slice(0, -2)}AA`, null)).reason).toBe('altered');
    // the unsigned form of earlier versions, and junk
    expect(refusal(() => tokens.open(body, null)).reason).toBe('malformed');
    expect(refusal(() => tokens.open('not a token', null)).reason).toBe('malformed');
  });

  it('is refused by an instance with another key, accepted by one with the same key', () => {
    const signed = new BulkTokens(SECRET).sign(token());
    expect(refusal(() => new BulkTokens('x'.repeat(32)).open(signed, null)).reason).toBe('altered');
    expect(refusal(() => new BulkTokens().open(signed, null)).reason).toBe('altered');
    expect(new BulkTokens(SECRET).open(signed, null).token.action).toBe('cancel');
  });

  it('expires after 15 minutes', () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const tokens = new BulkTokens(SECRET, undefined, () => now);
    const signed = tokens.sign(token());
    now += 15 * 60_000 - 1;
    const fresh = tokens.sign(token());
    now += 1;
    expect(refusal(() => tokens.open(signed, null))).toMatchObject({ reason: 'expired', status: 400 });
    expect(tokens.open(fresh, null).token.matched).toBe(3);
  });

  it('is single use (409), unless the batch it confirmed could not run', () => {
    const tokens = new BulkTokens(SECRET);
    const signed = tokens.sign(token());
    const first = tokens.open(signed, null);
    expect(refusal(() => tokens.open(signed, null))).toMatchObject({ reason: 'reused', status: 409 });
    first.release();
    expect(tokens.open(signed, null).token.action).toBe('cancel');
  });

  it('is refused for another action than the one the client confirms', () => {
    const tokens = new BulkTokens(SECRET);
    const signed = tokens.sign(token());
    expect(refusal(() => tokens.open(signed, 'delete'))).toMatchObject({ reason: 'wrong-action', status: 400 });
    expect(tokens.open(signed, 'cancel').token.action).toBe('cancel');
  });
});
