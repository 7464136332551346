import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import type { SchemaQueryClient } from '../../../libs/durable/src/store/schema-version.js';
import { adminQuery, urlFor } from '../../support/db.js';

/** The last migration of version 1 of the durable_* tables (main at 8e9a74a); later ones are version 2+. */
export const V1_LAST_MIGRATION = '20261129130000_claim_index_split';
export const MIGRATIONS_DIR = join(process.cwd(), 'prisma', 'migrations');

export interface ScratchDatabase {
  url: string;
  /** Runs SQL text (one or many statements) in one round trip. */
  exec(sql: string): Promise<void>;
  /** The check's view of this database, through a pg client. */
  client: SchemaQueryClient;
  drop(): Promise<void>;
}

/** An empty database (no template tables) with one open connection. */
export async function scratchDatabase(label: string): Promise<ScratchDatabase> {
  const name = `durable_schema_${label}_${process.pid}_${Math.floor(Math.random() * 1e6)}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  const c = new pg.Client({ connectionString: urlFor(name) });
  await c.connect();
  return {
    url: urlFor(name),
    exec: async (sql) => void (await c.query(sql)),
    client: { query: async <T>(text: string, params?: readonly unknown[]) => (await c.query(text, params as unknown[])).rows as T[] },
    drop: async () => {
      await c.end();
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** The names of prisma/migrations/*, in the order Prisma applies them; `upTo` (inclusive) stops early. */
export function migrationNames(upTo?: string): string[] {
  const all = readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
  return upTo ? all.filter((m) => m <= upTo) : all;
}

export async function applyMigrations(db: ScratchDatabase, names: string[]): Promise<void> {
  for (const m of names) await db.exec(readFileSync(join(MIGRATIONS_DIR, m, 'migration.sql'), 'utf8'));
}

/**
 * Everything Postgres knows about the durable_* tables that Prisma manages: columns (type,
 * nullability, default), constraints and index definitions, as sorted lines. Two databases with
 * equal catalogs have the same durable schema, whatever created it (migrations, schema.sql, upgrades).
 */
export async function durableCatalog(db: ScratchDatabase): Promise<string[]> {
  const rows = await db.client.query<{ line: string }>(`
    SELECT format('column %s.%s %s%s default %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
                  CASE WHEN a.attnotnull THEN ' not null' ELSE '' END, coalesce(pg_get_expr(d.adbin, d.adrelid), '-')) AS line
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
     WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname LIKE 'durable\\_%'
    UNION ALL
    SELECT format('constraint %s %s', con.conname, pg_get_constraintdef(con.oid))
      FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relname LIKE 'durable\\_%'
    UNION ALL
    SELECT format('index %s', indexdef) FROM pg_indexes WHERE schemaname = 'public' AND tablename LIKE 'durable\\_%'
    ORDER BY 1`);
  return rows.map((r) => r.line);
}
