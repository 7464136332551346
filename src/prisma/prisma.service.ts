import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { postgresPoolConfig } from 'nestjs-durable';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { PrismaClient } from '../generated/prisma/client.js';

/**
 * The app's PrismaClient, as a provider. DurableModule.forRoot({ prisma: PrismaService }) uses it too.
 * Its pool comes from postgresPoolConfig(): a dropped connection never crashes the app, and a
 * DATABASE_URL with several hosts follows the primary through a failover.
 */
@Injectable()
export class PrismaService extends PrismaClient implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    super({
      adapter: new PrismaPg(postgresPoolConfig(config.databaseUrl, { max: config.prismaPoolSize })),
    });
  }

  async onModuleInit(): Promise<void> {
    await this.$connect();
  }

  // Not onModuleDestroy: Nest calls that before beforeApplicationShutdown, where nestjs-durable
  // lets in-flight steps finish, and those steps still need the database.
  async onApplicationShutdown(): Promise<void> {
    await this.$disconnect();
  }
}
