// The example on MariaDB (DATABASE_URL=mysql://…): creates the database and its tables when they are
// not there yet, as the embedded Postgres applies the Prisma migrations. The durable_* tables come
// from the package's schema.mysql.sql (Prisma cannot declare all of them: binary collation, generated
// columns), the shop's from prisma/mysql/tables.sql.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { createConnection } from 'mariadb';

/** A MariaDB/MySQL URL (mysql:// or mariadb://), as the library reads one. */
export const isMariaDbUrl = (url: string): boolean => /^(mysql|mariadb):\/\//i.test(url);

/** The statements of an SQL file (whole-line comments dropped; no procedures in these files: `;` at a line's end ends a statement). */
const statements = (text: string) =>
  text
    .replace(/^\s*--.*$/gm, '')
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter(Boolean);

/** Creates the URL's database if missing, then whichever of the durable tables and the shop's tables it lacks. */
export async function ensureMariaDbTables(databaseUrl: string, log: (m: string) => void): Promise<void> {
  const u = new URL(databaseUrl);
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!database) throw new Error(`DATABASE_URL names no database: ${u.protocol}//${u.host}/<database>`);
  const conn = await createConnection({
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username) || 'root',
    password: u.password ? decodeURIComponent(u.password) : undefined,
  });
  try {
    await conn.query(`CREATE DATABASE IF NOT EXISTS \`${database.replace(/`/g, '``')}\` CHARACTER SET utf8mb4`);
    await conn.query(`USE \`${database.replace(/`/g, '``')}\``);
    const has = async (table: string) =>
      (
        (await conn.query('SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?', [
          table,
        ])) as unknown[]
      ).length > 0;
    const apply = async (what: string, file: string) => {
      for (const s of statements(readFileSync(file, 'utf8'))) await conn.query(s);
      log(`created ${what} in ${database} (${file})`);
    };
    if (!(await has('durable_runs')))
      await apply('the durable tables', createRequire(import.meta.url).resolve('nestjs-durable/prisma/schema.mysql.sql'));
    if (!(await has('orders'))) await apply("the shop's tables", resolve('prisma/mysql/tables.sql'));
  } finally {
    await conn.end();
  }
}
