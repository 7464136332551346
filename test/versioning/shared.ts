import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../../src/generated/prisma/client.js';

/** The two builds' PrismaClient (each build is its own process: DATABASE_URL from the environment). */
@Injectable()
export class PrismaService extends PrismaClient implements OnApplicationShutdown {
  constructor() {
    super({ adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL!, max: 3, connectionTimeoutMillis: 10_000 }) });
  }
  async onApplicationShutdown() {
    await this.$disconnect();
  }
}

/** Engine settings both builds share (fast polls; long waits suspend at once). */
export const fastDurable = {
  prisma: PrismaService,
  leaseMs: 2_000,
  heartbeatMs: 400,
  pollIntervalMs: 100,
  sweepIntervalMs: 200,
  shutdownGraceMs: 500,
  suspendGraceMs: 0,
  logging: false,
} as const;

export interface OrderInput {
  order: string;
}
