import { Global, Inject, Injectable, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { APP_CONFIG } from '../config/app-config.js';
import { createPrismaService, PrismaService } from './prisma.service.js';

/** Connects the app's PrismaClient at start and disconnects it at the very end. */
@Injectable()
class PrismaLifecycle implements OnModuleInit, OnApplicationShutdown {
  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {}

  async onModuleInit(): Promise<void> {
    await this.prisma.$connect();
  }

  // Not onModuleDestroy: Nest calls that before beforeApplicationShutdown, where nestjs-durable
  // lets in-flight steps finish, and those steps still need the database.
  async onApplicationShutdown(): Promise<void> {
    await this.prisma.$disconnect();
  }
}

@Global()
@Module({
  providers: [{ provide: PrismaService, inject: [APP_CONFIG], useFactory: createPrismaService }, PrismaLifecycle],
  exports: [PrismaService],
})
export class PrismaModule {}
