import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { MARIADB_AVAILABLE } from '../support/databases.js';
import { MARIADB_SERVER, onServer } from '../support/mariadb.js';
import { appSources, PRISMA_CONFIG, schemaPrisma } from './consumer-apps.js';
import { freshApp, packLibrary, prisma, sh, tempRoot, tsc, writeFiles } from './matrix.js';
import { expectReport, runScenario } from './scenario.js';

/**
 * The published package in a Nest 12 app on MariaDB (fixture test/package/apps/nest12-mariadb:
 * `@prisma/adapter-mariadb` and the `mariadb` driver instead of `@prisma/adapter-pg`), following
 * the README's steps for MariaDB: `npx nestjs-durable init` on a mysql datasource, the tables from
 * the package's `schema.mysql.sql` (Prisma's migrate engine for MySQL cannot run on the test
 * machines, so the SQL is applied as `mariadb app < …` would), `prisma generate`, the app's own
 * tsc, then the same scenario as on PostgreSQL: a start inside `prisma.$transaction` (committed
 * and rolled back), a transactional step, the guarded admin API, `app.close()`, and the CLI.
 */
const describeMaria = MARIADB_AVAILABLE ? describe : describe.skip;

/** Runs `fn` with a query function on the app's database (or the server, without one). */
const onDatabase = <T>(database: string | undefined, fn: (q: (sql: string, params?: unknown[]) => Promise<any[]>) => Promise<T>) =>
  onServer((c) => fn(async (sql, params = []) => (await c.query({ sql, timezone: 'Z' } as never, params)) as any[]), database);

describeMaria('npm package in a Nest app on MariaDB', () => {
  let work: string;
  let tarball: string;
  let dir: string;
  let committedId: string;
  const dbName = `durable_test_matrix_mariadb_${process.pid}_${Math.floor(Math.random() * 1e6)}`;
  const url = `${MARIADB_SERVER.replace(/\/$/, '')}/${dbName}`;

  beforeAll(async () => {
    work = tempRoot();
    ({ tarball } = packLibrary(work));
    await onDatabase(undefined, (q) => q(`CREATE DATABASE \`${dbName}\``));
  }, 180_000);
  afterAll(async () => {
    await onDatabase(undefined, (q) => q(`DROP DATABASE IF EXISTS \`${dbName}\``));
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('installs the tarball beside the MariaDB driver and adapter its lockfile pins', () => {
    dir = freshApp('nest12-mariadb', tarball, work).dir;
    const version = (pkg: string) => JSON.parse(readFileSync(join(dir, 'node_modules', pkg, 'package.json'), 'utf8')).version as string;
    expect(version('@prisma/adapter-mariadb')).toMatch(/^7\./);
    expect(version('mariadb')).toMatch(/^3\./);
    expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).dependencies['nestjs-durable']).toMatch(/^file:.*\.tgz$/);
  }, 900_000);

  it('adds the models for MariaDB with `npx nestjs-durable init`, and the tables from the packaged schema.mysql.sql', async () => {
    writeFiles(dir, { 'prisma.config.ts': PRISMA_CONFIG, 'prisma/schema.prisma': schemaPrisma('esm', 'mysql') });
    const init = sh('npx', ['--no', 'nestjs-durable', 'init'], dir);
    expect(init).toContain('The datasource is mysql');
    expect(init).toContain('schema.mysql.sql');
    expect(readFileSync(join(dir, 'prisma/durable.prisma'), 'utf8')).toBe(
      readFileSync(join(dir, 'node_modules/nestjs-durable/prisma/durable.mysql.prisma'), 'utf8'),
    );
    const schemaSql = readFileSync(join(dir, 'node_modules/nestjs-durable/prisma/schema.mysql.sql'), 'utf8');
    await onDatabase(dbName, async (q) => {
      // The app's own table, as its migration would have made it from the Greeting model.
      await q('CREATE TABLE greetings (id VARCHAR(191) NOT NULL PRIMARY KEY, name VARCHAR(191) NOT NULL, text VARCHAR(191) NULL)');
      await q(schemaSql);
    });
    prisma(dir, ['generate'], url);
  }, 300_000);

  it("compiles with the app's own TypeScript", () => {
    writeFiles(join(dir, 'src'), appSources('esm', 'mysql'));
    tsc(dir, ['-p', 'tsconfig.build.json']);
    expect(readFileSync(join(dir, 'dist/main.js'), 'utf8')).toMatch(/from 'nestjs-durable\/engine'/);
    expect(readFileSync(join(dir, 'dist/prisma.service.js'), 'utf8')).toContain('@prisma/adapter-mariadb');
  }, 300_000);

  it('runs: start in a transaction (committed and rolled back), a transactional step, admin API, app.close()', async () => {
    const report = runScenario(process.execPath, join(dir, 'dist/main.js'), dir, url);
    expectReport(report);
    const { committed, rolledBack } = report;
    committedId = committed.id;

    await onDatabase(dbName, async (q) => {
      // (the driver parses JSON columns)
      expect(await q('SELECT status, output FROM durable_runs WHERE id = ?', [committed.id])).toEqual([
        { status: 'SUCCEEDED', output: { text: 'hello Ada', runId: committed.id } },
      ]);
      // The transactional step's write and its checkpoint.
      expect(await q('SELECT text FROM greetings WHERE id = ?', [committed.id])).toEqual([{ text: 'hello Ada' }]);
      expect(await q('SELECT status, output FROM durable_steps WHERE run_id = ?', [committed.id])).toEqual([
        { status: 'SUCCEEDED', output: 'hello Ada' },
      ]);
      // The rolled-back transaction took its run with it.
      expect(
        await q('SELECT id FROM durable_runs WHERE id = ? UNION ALL SELECT id FROM greetings WHERE id = ?', [rolledBack.id, rolledBack.id]),
      ).toEqual([]);
      // app.close() handed everything back.
      expect(await q(`SELECT id FROM durable_runs WHERE status = 'RUNNING' OR lease_owner IS NOT NULL`)).toEqual([]);
    });
  }, 120_000);

  it('lists and shows runs with `npx nestjs-durable runs` against a mysql:// DATABASE_URL, no app running', () => {
    const cli = (...args: string[]) =>
      JSON.parse(sh('npx', ['--no', 'nestjs-durable', 'runs', ...args, '--json'], dir, { DATABASE_URL: url })) as unknown;
    const list = cli('list', '--workflow', 'greet', '--status', 'SUCCEEDED') as { items: Array<{ id: string }> };
    expect(list.items.map((r) => r.id)).toEqual([committedId]);
    expect(cli('show', committedId)).toMatchObject({ id: committedId, workflowName: 'greet', status: 'SUCCEEDED' });
  }, 120_000);
});
