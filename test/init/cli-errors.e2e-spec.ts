import { createServer, type AddressInfo, type Server } from 'node:net';
import { runRunsCommand } from '../../libs/durable/src/cli/runs-command.js';
import { runSchedulesCommand } from '../../libs/durable/src/cli/schedules-command.js';
import { adminQuery, urlFor } from '../support/db.js';
import { MARIADB_AVAILABLE } from '../support/databases.js';
import { createMariaTestDatabase, MARIADB_SERVER, mariaQuery } from '../support/mariadb.js';

/** A port nothing listens on. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });

/**
 * The command line against a database it cannot use: one line saying what failed and what to do,
 * exit code 3 (1 is "refused"), the stack only with --verbose.
 */
describe('nestjs-durable CLI: database errors', () => {
  const empty = `durable_test_cli_errors_${process.pid}`;
  let server: Server;
  let refusingUrl: string;

  /** A server speaking just enough of the PostgreSQL protocol to refuse the password. */
  function passwordRefusingServer(): Promise<Server> {
    const field = (t: string, v: string) => Buffer.concat([Buffer.from(t), Buffer.from(`${v}\0`)]);
    const body = Buffer.concat([
      field('S', 'FATAL'),
      field('V', 'FATAL'),
      field('C', '28P01'),
      field('M', 'password authentication failed for user "app"'),
      Buffer.from([0]),
    ]);
    const len = Buffer.alloc(4);
    len.writeInt32BE(body.length + 4);
    const s = createServer((socket) => socket.once('data', () => socket.end(Buffer.concat([Buffer.from('E'), len, body]))));
    return new Promise((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)));
  }

  beforeAll(async () => {
    await adminQuery(`CREATE DATABASE ${empty}`);
    server = await passwordRefusingServer();
    refusingUrl = `postgresql://app:wrong@127.0.0.1:${(server.address() as AddressInfo).port}/shop`;
  });
  afterAll(async () => {
    server.close();
    await adminQuery(`DROP DATABASE IF EXISTS ${empty} WITH (FORCE)`);
  });

  const cli = async (command: typeof runRunsCommand, args: string[], url: string) => {
    let out = '';
    let err = '';
    const io = { cwd: process.cwd(), out: (t: string) => (out += `${t}\n`), err: (t: string) => (err += `${t}\n`) };
    const code = await command(args, io, { DATABASE_URL: url });
    return { code, out, err };
  };
  const oneLine = (err: string) => {
    expect(err.trimEnd().split('\n')).toHaveLength(1);
    expect(err).not.toMatch(/\n\s+at |pg-pool/);
  };

  it('a wrong password: "cannot log in", check the user and password; exit 3', async () => {
    const r = await cli(runRunsCommand, ['list'], refusingUrl);
    expect(r.code).toBe(3);
    oneLine(r.err);
    expect(r.err).toMatch(/^nestjs-durable: cannot log in to app@127\.0\.0\.1:\d+\/shop: password authentication failed for user "app"/);
    expect(r.err).toContain('Check the user and password in DATABASE_URL');
    expect(r.err).not.toContain('wrong'); // the password is not printed
  });

  it('a database without the tables: says which, and how to create them; exit 3', async () => {
    for (const [command, args] of [
      [runRunsCommand, ['list']],
      [runRunsCommand, ['show', 'some-run']],
      [runSchedulesCommand, ['list']],
    ] as const) {
      const r = await cli(command, [...args], urlFor(empty));
      expect(r.code).toBe(3);
      oneLine(r.err);
      expect(r.err).toContain(`@127.0.0.1:5432/${empty} has no nestjs-durable tables`);
      expect(r.err).toContain('npx nestjs-durable init, then npx prisma migrate deploy');
    }
  });

  it('a database that does not exist, and a port where nothing listens; exit 3', async () => {
    const missing = await cli(runRunsCommand, ['list'], urlFor('no_such_database_here'));
    expect(missing.code).toBe(3);
    oneLine(missing.err);
    expect(missing.err).toContain('database "no_such_database_here" does not exist');
    const closed = new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const port = await closed;
    const unreachable = await cli(runRunsCommand, ['show', 'x'], `postgresql://postgres@127.0.0.1:${port}/shop`);
    expect(unreachable.code).toBe(3);
    oneLine(unreachable.err);
    expect(unreachable.err).toContain(`cannot reach postgres@127.0.0.1:${port}/shop (connect ECONNREFUSED`);
    expect(unreachable.err).toContain('Is the database server running there?');
  });

  (MARIADB_AVAILABLE ? it : it.skip)('says the same things of a MariaDB URL', async () => {
    const server = MARIADB_SERVER.replace(/\/$/, '');
    const noDb = await cli(runRunsCommand, ['list'], `${server}/no_such_database_here`);
    expect(noDb.code).toBe(3);
    oneLine(noDb.err);
    expect(noDb.err).toContain('Check the database name in DATABASE_URL');
    const empty = await createMariaTestDatabase('cli_errors');
    try {
      await mariaQuery(empty.name, 'DROP TABLE durable_steps, durable_run_tags, durable_runs');
      const noTables = await cli(runRunsCommand, ['list'], empty.url);
      expect(noTables.code).toBe(3);
      expect(noTables.err).toContain('has no nestjs-durable tables');
      expect(noTables.err).toContain('schema.mysql.sql');
    } finally {
      await empty.drop();
    }
    const port = await freePort();
    const unreachable = await cli(runRunsCommand, ['show', 'x'], `mysql://root@127.0.0.1:${port}/shop`);
    expect(unreachable.code).toBe(3);
    expect(unreachable.err).toContain(`cannot reach root@127.0.0.1:${port}/shop`);
    expect(unreachable.err).toContain('Is the database server running there?');
  });

  it('--verbose adds the stack after the line', async () => {
    const r = await cli(runRunsCommand, ['list', '--verbose'], refusingUrl);
    expect(r.code).toBe(3);
    const [line, ...stack] = r.err.trimEnd().split('\n');
    expect(line).toContain('cannot log in');
    expect(stack.join('\n')).toMatch(/\n\s+at /);
  });
});
