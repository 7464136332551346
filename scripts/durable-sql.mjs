#!/usr/bin/env node
// The durable_* tables as plain SQL, for apps that run their own SQL migrations:
//   libs/durable/prisma/schema.sql                   the current version, onto an empty schema
//   libs/durable/prisma/upgrades/<v>-to-<v+1>.sql    from each earlier version to the next
// generated from libs/durable/prisma/durable.prisma and the earlier versions kept in
// scripts/durable-versions/<v>.prisma by the Prisma CLI itself (`prisma migrate diff --script`),
// so the SQL is the SQL `prisma migrate dev` runs for Prisma users.
//
//   node scripts/durable-sql.mjs           (re)writes the files
//   node scripts/durable-sql.mjs --check   exit 1 if a checked-in file differs from what it generates now
//
// A new schema version: copy durable.prisma to scripts/durable-versions/<its version>.prisma,
// then change durable.prisma (raising the @default of DurableSchema.version and SCHEMA_VERSION in
// libs/durable/src/store/schema-version.ts), then run this script. Values a new column needs in the
// rows that exist (what the app's Prisma migration does by hand) go in
// scripts/durable-versions/<v>-to-<v+1>.data.sql: appended to that step's upgrade file.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const lib = join(root, 'libs', 'durable', 'prisma');
const versionsDir = join(root, 'scripts', 'durable-versions');

/** The schema version a durable.prisma declares: the DEFAULT of DurableSchema.version; 1 before that model existed. */
function declaredVersion(prisma) {
  const m = /model\s+DurableSchema\s*\{[^}]*?\bversion\s+Int\s+@id\s+@default\((\d+)\)/.exec(prisma);
  return m ? Number(m[1]) : 1;
}

/**
 * The environment of the Prisma CLI: this process's, so PRISMA_SCHEMA_ENGINE_BINARY (where Prisma
 * cannot download its schema engine) reaches it; without NODE_OPTIONS, which jest's may carry.
 */
const prismaEnv = () => ({ ...process.env, NODE_OPTIONS: '' });

/** `prisma migrate diff … --script`, run where no prisma.config.ts is (so nothing but SQL reaches stdout). */
function migrateDiff(cwd, args) {
  const cli = join(root, 'node_modules', 'prisma', 'build', 'index.js');
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [cli, 'migrate', 'diff', ...args, '--script'], { cwd, env: prismaEnv() });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) =>
      code === 0 ? ok(out) : fail(new Error(`prisma migrate diff ${args.join(' ')} exited ${code}:\n${err}${out}`)),
    );
  });
}

/** A schema folder holding one version of durable.prisma next to a PostgreSQL datasource. */
function schemaFolder(tmp, version, prisma) {
  const dir = join(tmp, `v${version}`);
  mkdirSync(dir);
  writeFileSync(
    join(dir, 'schema.prisma'),
    'generator client {\n  provider        = "prisma-client"\n  output          = "./generated"\n  previewFeatures = ["partialIndexes"]\n}\n\n' +
      'datasource db {\n  provider = "postgresql"\n}\n',
  );
  writeFileSync(join(dir, 'durable.prisma'), prisma);
  return dir;
}

/**
 * The script without `CREATE SCHEMA IF NOT EXISTS "public"`, which `--from-empty` adds: the tables
 * belong in whatever schema the app's migration runs in (its search_path), as with Prisma's own
 * migrations. Diffs between two schema files are exact (the partial-index quirk of diffs against
 * a database does not occur here), so nothing else is changed.
 */
const withoutCreateSchema = (script) =>
  script
    .trim()
    .split(/\n(?=-- [A-Za-z]+\n)/)
    .filter((block) => !/^-- CreateSchema\nCREATE SCHEMA IF NOT EXISTS "public";\s*$/.test(block))
    .map((block) => block.trim())
    .join('\n\n');

const file = (header, script, data = null) =>
  `${header.map((l) => `-- ${l}`).join('\n')}\n\n${withoutCreateSchema(script)}\n${data ? `\n-- Data\n${data}\n` : ''}`;

/**
 * The data changes that go with the step from version v (scripts/durable-versions/<v>-to-<v+1>.data.sql,
 * written by hand: a new column's values for the rows that exist), run after the generated DDL; null if none.
 */
function dataOf(v) {
  const path = join(versionsDir, `${v}-to-${v + 1}.data.sql`);
  return existsSync(path) ? readFileSync(path, 'utf8').trim() : null;
}

/** Every file this script owns, by path, with the content it generates now. */
async function generate() {
  const current = readFileSync(join(lib, 'durable.prisma'), 'utf8');
  const latest = declaredVersion(current);
  const texts = new Map([[latest, current]]);
  for (const f of existsSync(versionsDir) ? readdirSync(versionsDir) : []) {
    const v = Number(/^(\d+)\.prisma$/.exec(f)?.[1]);
    if (!v) continue;
    const text = readFileSync(join(versionsDir, f), 'utf8');
    if (declaredVersion(text) !== v) throw new Error(`scripts/durable-versions/${f} declares version ${declaredVersion(text)}, not ${v}`);
    texts.set(v, text);
  }
  for (let v = 1; v <= latest; v++) {
    if (!texts.has(v)) throw new Error(`scripts/durable-versions/${v}.prisma is missing (the durable.prisma of schema version ${v})`);
  }
  if (texts.size !== latest) throw new Error(`scripts/durable-versions holds versions beyond durable.prisma's ${latest}`);

  const tmp = mkdtempSync(join(tmpdir(), 'durable-sql-'));
  try {
    const dirs = new Map([...texts].map(([v, t]) => [v, schemaFolder(tmp, v, t)]));
    const [fromEmpty, ...steps] = await Promise.all([
      migrateDiff(tmp, ['--from-empty', '--to-schema', dirs.get(latest)]),
      ...[...dirs.keys()]
        .filter((v) => v < latest)
        .map(async (v) => [v, await migrateDiff(tmp, ['--from-schema', dirs.get(v), '--to-schema', dirs.get(v + 1)])]),
    ]);
    const files = new Map();
    files.set(
      join(lib, 'schema.sql'),
      file(
        [
          `nestjs-durable schema version ${latest}: the durable_* tables, for apps that run their own SQL migrations`,
          '(with Prisma migrations, `npx nestjs-durable init` adds durable.prisma to your schema instead).',
          'Add it to your migrations once; it creates the tables in the schema the migration runs in (search_path).',
          'A later release that changes them ships prisma/upgrades/<from>-to-<to>.sql.',
          'Generated from durable.prisma by scripts/durable-sql.mjs (prisma migrate diff --from-empty): do not edit.',
        ],
        fromEmpty,
      ),
    );
    for (const [v, script] of steps) {
      files.set(
        join(lib, 'upgrades', `${v}-to-${v + 1}.sql`),
        file(
          [
            `nestjs-durable: upgrades the durable_* tables from schema version ${v} to ${v + 1}, for apps that run their own SQL migrations.`,
            `Generated by scripts/durable-sql.mjs (prisma migrate diff from version ${v}'s durable.prisma to version ${v + 1}'s): do not edit.`,
            ...(dataOf(v) ? [`The data changes at the end come from scripts/durable-versions/${v}-to-${v + 1}.data.sql.`] : []),
          ],
          script,
          dataOf(v),
        ),
      );
    }
    return files;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

async function main() {
  const check = process.argv.includes('--check');
  const files = await generate();
  const stale = [...files]
    .filter(([path, text]) => !existsSync(path) || readFileSync(path, 'utf8') !== text)
    .map(([path]) => relative(root, path));
  if (check) {
    if (stale.length) {
      console.error(`Out of date: ${stale.join(', ')}. Run \`node scripts/durable-sql.mjs\` and commit the result.`);
      process.exit(1);
    }
    console.log(`Up to date: ${[...files.keys()].map((p) => relative(root, p)).join(', ')}`);
    return;
  }
  for (const [path, text] of files) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
  console.log(stale.length ? `Wrote ${stale.join(', ')}` : 'Nothing changed');
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(2);
});
