import { readFileSync } from 'node:fs';
import { readSchemaState, SCHEMA_VERSION, schemaStateError, upgradeSqlFiles } from '../../libs/durable/src/store/schema-version.js';
import { MARIADB_AVAILABLE } from '../support/databases.js';
import { createMariaTestDatabase, mariaQuery, onServer } from '../support/mariadb.js';
import type { TestDatabase } from '../support/db.js';

/**
 * The MariaDB tables exist twice: as SQL (schema.mysql.sql, what creates them, with the binary
 * collation Prisma cannot express) and as Prisma models (durable.mysql.prisma, what an app's
 * `prisma migrate` compares them with). Prisma's migrate engine for MySQL cannot run here, so the
 * two are held together by reading both: every model's columns (name, type, nullability), primary
 * key and indexes must be what the SQL made, read back from MariaDB's catalog.
 */
const PRISMA = readFileSync(new URL('../../libs/durable/prisma/durable.mysql.prisma', import.meta.url), 'utf8');

interface Column {
  name: string;
  type: string;
  nullable: boolean;
}
interface Model {
  table: string;
  columns: Column[];
  primary: string[];
  indexes: Map<string, { columns: string[]; unique: boolean }>;
}

/** The column type MariaDB reports for a Prisma field. */
function columnType(type: string, attrs: string): string {
  const db = /@db\.(\w+)(?:\(([^)]*)\))?/.exec(attrs);
  if (db) return `${db[1].toLowerCase()}${db[2] ? `(${db[2]})` : ''}`;
  return { Int: 'int(11)', BigInt: 'bigint(20)', Boolean: 'tinyint(1)', Json: 'longtext', String: 'varchar(191)', DateTime: 'datetime(3)' }[
    type
  ]!;
}

/** The models of durable.mysql.prisma, enough of them to compare with the catalog. */
function models(text: string): Model[] {
  const out: Model[] = [];
  for (const m of text.matchAll(/^model (\w+) \{([\s\S]*?)^\}/gm)) {
    const body = m[2];
    const mapName = (field: string) => {
      const line = new RegExp(`^\\s*${field}\\s+\\S+[^\\n]*`, 'm').exec(body)?.[0] ?? '';
      return /@map\("([^"]+)"\)/.exec(line)?.[1] ?? field;
    };
    const columns: Column[] = [];
    let primary: string[] = [];
    for (const line of body.split('\n')) {
      const f = /^\s*(\w+)\s+(\w+)(\?|\[\])?\s*(.*)$/.exec(line);
      if (!f || line.trim().startsWith('//') || line.trim().startsWith('@@')) continue;
      const [, name, type, optional, attrs] = f;
      if (/^[A-Z]/.test(type) && !['String', 'Int', 'BigInt', 'Boolean', 'Json', 'DateTime'].includes(type)) continue; // a relation
      columns.push({ name: /@map\("([^"]+)"\)/.exec(attrs)?.[1] ?? name, type: columnType(type, attrs), nullable: optional === '?' });
      if (/@id\b/.test(attrs)) primary = [/@map\("([^"]+)"\)/.exec(attrs)?.[1] ?? name];
    }
    const fieldList = (s: string) => s.split(',').map((x) => mapName(x.trim()));
    const id = /@@id\(\[([^\]]+)\]\)/.exec(body);
    if (id) primary = fieldList(id[1]);
    const indexes = new Map<string, { columns: string[]; unique: boolean }>();
    for (const ix of body.matchAll(/@@(index|unique)\(\[([^\]]+)\], map: "([^"]+)"\)/g)) {
      indexes.set(ix[3], { columns: fieldList(ix[2]), unique: ix[1] === 'unique' });
    }
    out.push({ table: /@@map\("([^"]+)"\)/.exec(body)![1], columns, primary, indexes });
  }
  return out;
}

/** Every model's columns, primary key and indexes are what MariaDB's catalog says `database` has. */
async function expectCatalogMatches(database: string, declared: Model[], { binaryCollation }: { binaryCollation: boolean }) {
  for (const model of declared) {
    const columns = await mariaQuery<{ name: string; type: string; nullable: string; collation: string | null }>(
      database,
      `SELECT COLUMN_NAME AS name, COLUMN_TYPE AS type, IS_NULLABLE AS nullable, COLLATION_NAME AS collation
       FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`,
      [model.table],
    );
    expect({ table: model.table, columns: columns.map((c) => ({ name: c.name, type: c.type, nullable: c.nullable === 'YES' })) }).toEqual({
      table: model.table,
      columns: model.columns,
    });
    if (binaryCollation)
      for (const c of columns) if (c.collation) expect(`${model.table}.${c.name} ${c.collation}`).toMatch(/utf8mb4_bin$/);
    const stats = await mariaQuery<{ name: string; col: string; nonUnique: number }>(
      database,
      `SELECT INDEX_NAME AS name, COLUMN_NAME AS col, NON_UNIQUE AS nonUnique FROM information_schema.STATISTICS
       WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX`,
      [model.table],
    );
    const found = new Map<string, { columns: string[]; unique: boolean }>();
    for (const s of stats) {
      const ix = found.get(s.name) ?? { columns: [], unique: Number(s.nonUnique) === 0 };
      ix.columns.push(s.col);
      found.set(s.name, ix);
    }
    expect({ table: model.table, primary: found.get('PRIMARY')?.columns }).toEqual({ table: model.table, primary: model.primary });
    found.delete('PRIMARY');
    // A foreign key's own index (InnoDB names it after the constraint) is Prisma's too; none here needs one.
    expect({ table: model.table, indexes: Object.fromEntries(found) }).toEqual({
      table: model.table,
      indexes: Object.fromEntries(model.indexes),
    });
  }
}

(MARIADB_AVAILABLE ? describe : describe.skip)('the MariaDB schema: schema.mysql.sql and durable.mysql.prisma agree', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createMariaTestDatabase('mysql_schema');
  });
  afterAll(() => db.drop());

  it('has the same tables, columns, keys and indexes, and the schema version this release needs', async () => {
    const declared = models(PRISMA);
    expect(declared.map((m) => m.table).sort()).toEqual(
      (
        await mariaQuery<{ t: string }>(
          db.name,
          "SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE 'durable\\_%'",
        )
      )
        .map((r) => r.t)
        .sort(),
    );
    await expectCatalogMatches(db.name, declared, { binaryCollation: true });
    const [version] = await mariaQuery<{ d: string }>(
      db.name,
      "SELECT COLUMN_DEFAULT AS d FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'durable_schema' AND COLUMN_NAME = 'version'",
    );
    expect(Number(version.d)).toBe(SCHEMA_VERSION);
    expect(PRISMA).toContain(`version Int @id @default(${SCHEMA_VERSION})`);
  });

  it('tables of an earlier version are refused naming the MariaDB upgrade files, and become current with them', async () => {
    const old = await createMariaTestDatabase('mysql_upgrade');
    try {
      // Version 4's tables: version 5 added durable_runs.context, version 6 durable_stream_chunks, version 7
      // durable_child_groups and durable_group_ends with durable_runs.group_seq and group_index (and their index).
      await onServer(
        (c) =>
          c.query(
            'DROP TABLE durable_child_groups; DROP TABLE durable_group_ends; ALTER TABLE durable_runs DROP INDEX durable_runs_group_idx, DROP COLUMN group_seq, DROP COLUMN group_index; ' +
              'DROP TABLE durable_stream_chunks; ALTER TABLE durable_runs DROP COLUMN context; ALTER TABLE durable_schema ALTER COLUMN version SET DEFAULT 4',
          ),
        old.name,
      );
      const sql = { dialect: 'mysql', query: (text: string, params?: unknown[]) => mariaQuery(old.name, text, params) };
      const state = await readSchemaState(sql as never);
      expect(state).toEqual({ status: 'older', version: 4, expected: SCHEMA_VERSION, dialect: 'mysql' });
      const files = upgradeSqlFiles(4, SCHEMA_VERSION, 'mysql');
      expect(schemaStateError(state)?.message).toContain(files[0]);
      for (const f of files) {
        await onServer((c) => c.query(readFileSync(new URL(`../../libs/durable/${f}`, import.meta.url), 'utf8')), old.name);
      }
      expect(await readSchemaState(sql as never)).toMatchObject({ status: 'current', version: SCHEMA_VERSION });
      await expectCatalogMatches(old.name, models(PRISMA), { binaryCollation: true });
    } finally {
      await old.drop();
    }
  });

  it("the example app's MariaDB tables (prisma/mysql/tables.sql) are what its models (prisma/mysql/app.prisma) say", async () => {
    const app = await createMariaTestDatabase(
      'mysql_example',
      readFileSync(new URL('../../prisma/mysql/tables.sql', import.meta.url), 'utf8'),
    );
    try {
      const declared = models(readFileSync(new URL('../../prisma/mysql/app.prisma', import.meta.url), 'utf8'));
      expect(declared.map((m) => m.table).sort()).toEqual(['orders', 'outbox_emails', 'stock']);
      await expectCatalogMatches(app.name, declared, { binaryCollation: false });
    } finally {
      await app.drop();
    }
  });
});
