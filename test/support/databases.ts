import type { INestApplication, Provider } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { DurableModule } from 'nestjs-durable';
import pg from 'pg';
import { PrismaClient as MysqlPrismaClient } from '../generated/mysql-prisma/client.js';
import { createTestDatabase } from './db.js';
import { createMariaTestDatabase, mariaQuery } from './mariadb.js';
import { prismaFor } from './prisma.js';

export type DatabaseKind = 'postgres' | 'mariadb';
/** MariaDB answers (the global setup found it: see findMariaDb in global-setup.ts). */
export const MARIADB_AVAILABLE = process.env.DURABLE_TEST_MARIADB === '1';
/** The databases the engine supports, as far as this run has them; a suite parametrised by database runs once per entry. */
export const DATABASES: readonly DatabaseKind[] = MARIADB_AVAILABLE ? ['postgres', 'mariadb'] : ['postgres'];

/**
 * A fresh database of one kind for one test file, with a Prisma client the way an app on it builds
 * one, and `query` for assertions: SQL with `?` placeholders, which runs on both (as long as it sticks
 * to what both speak).
 */
export interface KindDatabase {
  kind: DatabaseKind;
  name: string;
  url: string;
  /** A PrismaClient (adapter-pg or adapter-mariadb): pass it to the engine, open transactions with it. */
  prisma: any;
  /** `?` placeholders; on Postgres they become $1, $2, … */
  sql(text: string): string;
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

const numbered = (text: string) => {
  let i = 0;
  return text.replace(/\?/g, () => `$${++i}`);
};

export async function openDatabase(kind: DatabaseKind, label: string): Promise<KindDatabase> {
  if (kind === 'postgres') {
    const db = await createTestDatabase(label);
    const prisma = prismaFor(db.url);
    const pool = new pg.Pool({ connectionString: db.url, max: 3 });
    pool.on('error', () => {});
    return {
      kind,
      name: db.name,
      url: db.url,
      prisma,
      sql: numbered,
      query: async (text, params = []) => (await pool.query(numbered(text), params)).rows,
      close: async () => {
        await prisma.$disconnect();
        await pool.end();
        await db.drop();
      },
    };
  }
  const db = await createMariaTestDatabase(label);
  const prisma = new MysqlPrismaClient({ adapter: new PrismaMariaDb(db.url.replace(/^mysql:/, 'mariadb:')) });
  return {
    kind,
    name: db.name,
    url: db.url,
    prisma,
    sql: (text) => text,
    query: (text, params = []) => mariaQuery(db.name, text, params),
    close: async () => {
      await prisma.$disconnect();
      await db.drop();
    },
  };
}

/** The token the suites provide a database's PrismaClient under (as an app's PrismaService). */
export const PRISMA = Symbol('PrismaService');

/**
 * A Nest app on `db`: DurableModule.forRoot with its Prisma client and its URL (the engine's own
 * pool), short polls, the given options and providers; initialised, not listening.
 */
export async function durableApp(
  db: KindDatabase,
  providers: Provider[],
  options: Omit<Parameters<typeof DurableModule.forRoot>[0], 'prisma'> = {},
): Promise<INestApplication> {
  const ref = await Test.createTestingModule({
    imports: [DurableModule.forRoot({ prisma: PRISMA, connection: db.url, pollIntervalMs: 100, logging: false, ...options })],
    providers: [{ provide: PRISMA, useValue: db.prisma }, ...providers],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}
