import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../../src/generated/prisma/client.js';

/** A PrismaClient for a test database, the way an app builds one (driver adapter). */
export function prismaFor(url: string, max = 5): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max, connectionTimeoutMillis: 10_000 }) });
}
