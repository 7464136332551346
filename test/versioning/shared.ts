import { PrismaService } from '../support/worker-app.js';

export { PrismaService };

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
