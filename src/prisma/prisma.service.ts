import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { PrismaPg } from '@prisma/adapter-pg';
import { postgresPoolConfig } from 'nestjs-durable';
import type { AppConfig } from '../config/app-config.js';
import { isMariaDbUrl } from '../database/mariadb-tables.js';
import { PrismaClient as MysqlPrismaClient } from '../generated/mysql-prisma/client.js';
import { PrismaClient } from '../generated/prisma/client.js';

/**
 * The app's PrismaClient, as a provider token. DurableModule.forRoot({ prisma: PrismaService }) uses
 * it too. It is built by `createPrismaService` for the database DATABASE_URL names:
 * - PostgreSQL: adapter-pg with postgresPoolConfig() (a dropped connection never crashes the app, and
 *   a DATABASE_URL with several hosts follows the primary through a failover);
 * - MariaDB (mysql:// or mariadb://): adapter-mariadb, with the client generated from prisma/mysql.
 * Both clients have the same app models, so the services are written once against this type.
 */
export abstract class PrismaService extends PrismaClient {}

export function createPrismaService(config: AppConfig): PrismaService {
  if (isMariaDbUrl(config.databaseUrl)) {
    const url = new URL(config.databaseUrl);
    url.protocol = 'mariadb:';
    url.searchParams.set('connectionLimit', String(config.prismaPoolSize));
    return new MysqlPrismaClient({ adapter: new PrismaMariaDb(url.toString()) }) as unknown as PrismaService;
  }
  return new PrismaClient({
    adapter: new PrismaPg(postgresPoolConfig(config.databaseUrl, { max: config.prismaPoolSize })),
  }) as PrismaService;
}
