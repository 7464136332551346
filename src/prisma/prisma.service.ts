import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { PrismaPg } from '@prisma/adapter-pg';
import { postgresPoolConfig } from 'nestjs-durable';
import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { isMariaDbUrl } from '../database/mariadb-tables.js';
import { PrismaClient as MysqlPrismaClient } from '../generated/mysql-prisma/client.js';
import { PrismaClient } from '../generated/prisma/client.js';

/**
 * The app's PrismaClient, as a provider. DurableModule.forRoot({ prisma: PrismaService }) uses it too.
 * On PostgreSQL it is this class: adapter-pg with postgresPoolConfig() (a dropped connection never
 * crashes the app, and a DATABASE_URL with several hosts follows the primary through a failover).
 * On MariaDB (a mysql:// or mariadb:// DATABASE_URL) PrismaModule provides, under this token, the
 * client generated from prisma/mysql with adapter-mariadb (`createPrismaService`): both clients have
 * the same app models, so the services are written once against this type.
 */
@Injectable()
export class PrismaService extends PrismaClient {
  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    super({ adapter: new PrismaPg(postgresPoolConfig(config.databaseUrl, { max: config.prismaPoolSize })) });
  }
}

export function createPrismaService(config: AppConfig): PrismaService {
  if (isMariaDbUrl(config.databaseUrl)) {
    const url = new URL(config.databaseUrl);
    url.protocol = 'mariadb:';
    url.searchParams.set('connectionLimit', String(config.prismaPoolSize));
    return new MysqlPrismaClient({ adapter: new PrismaMariaDb(url.toString()) }) as unknown as PrismaService;
  }
  return new PrismaService(config);
}
