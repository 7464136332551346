import { InvalidOptionsError } from '../errors/index.js';
import { parsePostgresUrl } from './postgres-hosts.js';

describe('parsePostgresUrl', () => {
  it('keeps an ordinary URL as it is, with its one host', () => {
    expect(parsePostgresUrl('postgresql://u:p@db:6543/app?schema=s')).toEqual({
      hosts: [{ host: 'db', port: 6543 }],
      url: 'postgresql://u:p@db:6543/app?schema=s',
      primaryOnly: false,
    });
  });

  it('leaves a Unix socket URL alone', () => {
    expect(parsePostgresUrl('postgresql://u@%2Fvar%2Frun%2Fpostgresql/app').url).toBe('postgresql://u@%2Fvar%2Frun%2Fpostgresql/app');
  });

  it('splits a libpq multi-host URL and leaves node-postgres a single-host one', () => {
    const parsed = parsePostgresUrl('postgres://u:p%40ss@db1,db2:5433,[::1]:5434/app?target_session_attrs=read-write&sslmode=disable');
    expect(parsed.hosts).toEqual([
      { host: 'db1', port: 5432 },
      { host: 'db2', port: 5433 },
      { host: '::1', port: 5434 },
    ]);
    expect(parsed.url).toBe('postgres://u:p%40ss@db1/app?sslmode=disable');
    expect(parsed.primaryOnly).toBe(true);
  });

  it('looks for the primary behind one host when asked to (target_session_attrs=primary)', () => {
    expect(parsePostgresUrl('postgresql://db/app?target_session_attrs=primary')).toMatchObject({
      primaryOnly: true,
      url: 'postgresql://db/app',
    });
  });

  it('refuses what would let the engine write to a standby, or a host it cannot read', () => {
    for (const url of [
      'postgresql://db1,db2/app?target_session_attrs=any',
      'postgresql://db/app?target_session_attrs=standby',
      'postgresql://db1,:5432/app',
      'postgresql://db:99999/app',
    ]) {
      expect(() => parsePostgresUrl(url)).toThrow(InvalidOptionsError);
    }
  });

  it('never repeats a password in its errors', () => {
    expect(() => parsePostgresUrl('postgresql://u:secret@db:0/app')).toThrow(/u:\*\*\*@/);
  });
});
