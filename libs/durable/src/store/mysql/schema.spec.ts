import { serverError } from './schema.js';

describe('which MySQL-family servers the engine runs on', () => {
  it.each([
    ['10.6.0-MariaDB', false, null],
    ['10.11.19-MariaDB-0+deb12u1', false, null],
    ['11.4.2-MariaDB', false, null],
    ['10.5.27-MariaDB', false, /MariaDB 10\.6 or later \(SKIP LOCKED\)/],
    ['8.0.36', false, /MySQL 8\.0\.36.*untested.*allowUntestedMysql: true/s],
    ['8.4.0', true, null],
    ['5.7.44', true, /MySQL 5\.7\.44/],
  ])('%s (allowUntestedMysql %s)', (version, allow, refusal) => {
    const product = /mariadb/i.test(version) ? 'MariaDB' : 'MySQL';
    const err = serverError({ product, version }, allow);
    if (refusal === null) expect(err).toBeNull();
    else expect(err).toMatchObject({ code: 'UNSUPPORTED_DATABASE', feature: 'server', message: expect.stringMatching(refusal) });
  });
});
