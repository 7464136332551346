import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { PrismaClient as MysqlPrismaClient } from '../generated/mysql-prisma/client.js';

/**
 * A PrismaClient for a test database, the way an app builds one (driver adapter): adapter-pg, or for
 * a mysql:// URL adapter-mariadb with the tests' MariaDB client (the same raw-SQL API; typed as the
 * Postgres one, which is all the worker scripts use of it).
 */
export function prismaFor(url: string, max = 5): PrismaClient {
  if (/^(mysql|mariadb):/.test(url)) {
    const u = new URL(url);
    u.protocol = 'mariadb:';
    u.searchParams.set('connectionLimit', String(max));
    return new MysqlPrismaClient({ adapter: new PrismaMariaDb(u.toString()) }) as unknown as PrismaClient;
  }
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max, connectionTimeoutMillis: 10_000 }) });
}
