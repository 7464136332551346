import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { withConfigSchema } from './config-text.js';
import {
  durablePrismaVersion,
  hasDurableModels,
  isDurableOnly,
  PACKAGE_DURABLE_MYSQL_PRISMA,
  PACKAGE_DURABLE_PRISMA,
  readPackageDurablePrisma,
} from './durable-prisma.js';
import type { FileChange } from './file-change.js';
import { CLIENT_PROVIDERS, datasourceProvider, findGenerators, PARTIAL_INDEXES, withPreviewFeature } from './generator-block.js';
import { InitError } from './init-error.js';
import { prismaFilesIn } from './prisma-files.js';
import { locateProject, shown, type PrismaProject } from './prisma-project.js';

export interface InitOptions {
  /** The app's folder (where `npx prisma …` runs). */
  cwd: string;
  /** Replace an older (or edited) durable.prisma with the package's. */
  upgrade?: boolean;
  /** --schema: the schema file or folder, when init cannot find it. */
  schema?: string;
  /** --config: the Prisma config file, when it is not in a default place. */
  config?: string;
  /** The package's durable.prisma (tests point it elsewhere). */
  packageDurablePrisma?: string;
}

/** What init found and would change. Nothing is written while planning. */
export interface InitPlan {
  project: PrismaProject;
  /** The schema folder after the changes. */
  folder: string;
  changes: FileChange[];
  /** The schema version of the app's durable.prisma before (null: none) and after. */
  fromVersion: number | null;
  toVersion: number;
  /** Things the user should know that are not changes (e.g. a reformatted durable.prisma left alone). */
  notes: string[];
}

/**
 * Plans `nestjs-durable init`: make the schema a folder (a single file's own folder becomes the
 * schema folder, so nothing moves and every path Prisma derives from it stays the same), put the
 * package's durable.prisma in it, and turn on partialIndexes in the client generator.
 * Throws InitError (having written nothing) when it cannot do that safely.
 */
export function planInit(opts: InitOptions): InitPlan {
  const project = locateProject(opts.cwd, opts);
  const changes: FileChange[] = [];
  const notes: string[] = [];
  const root = project.root;
  const schema = project.schema;
  const folder = schema.kind === 'folder' ? schema.path : dirname(schema.path);
  if (schema.kind === 'file') {
    checkFolderCanBeSchema(project, folder);
    changes.push(pointPrismaAt(project, folder));
  }

  const files = prismaFilesIn(folder).map((path) => ({ path, text: readFileSync(path, 'utf8') }));
  // The models follow the app's datasource: MariaDB/MySQL have neither partial indexes nor text[].
  const mysql = files.some((f) => datasourceProvider(f.text) === 'mysql');
  const packaged = readPackageDurablePrisma(opts.packageDurablePrisma ?? (mysql ? PACKAGE_DURABLE_MYSQL_PRISMA : PACKAGE_DURABLE_PRISMA));
  if (mysql) {
    notes.push(
      'The datasource is mysql (MariaDB 10.6+): durable.prisma holds the models for it. Create the tables from ' +
        'node_modules/nestjs-durable/prisma/schema.mysql.sql (binary collation: run ids are case-sensitive): ' +
        '`npx prisma migrate dev --create-only --name durable`, replace the new migration.sql with that file, then `npx prisma migrate dev`.',
    );
  }
  const toVersion = durablePrismaVersion(packaged);
  const copy = durableCopy(root, files);
  const fromVersion = copy ? durablePrismaVersion(copy.text) : null;
  if (!copy) {
    changes.push({
      path: join(folder, 'durable.prisma'),
      before: null,
      after: packaged,
      why: `the durable_* models (schema version ${toVersion})`,
    });
  } else if (copy.text !== packaged) {
    const step = upgradeStep(shown(root, copy.path), fromVersion!, toVersion, !!opts.upgrade);
    if ('note' in step) notes.push(step.note);
    else changes.push({ path: copy.path, before: copy.text, after: packaged, why: step.change, showLines: false });
  }

  if (!mysql) {
    changes.push(
      ...enablePartialIndexes(
        root,
        files.filter((f) => f !== copy),
      ),
    );
  }
  return { project, folder, changes, fromVersion, toVersion, notes };
}

/** The app's copy of durable.prisma: the one .prisma file of the folder that defines model DurableRun, and nothing else. */
function durableCopy(root: string, files: { path: string; text: string }[]): { path: string; text: string } | undefined {
  const copies = files.filter((f) => hasDurableModels(f.text));
  if (copies.length > 1 || copies.some((c) => !isDurableOnly(c.text))) {
    throw new InitError(
      'DURABLE_MODELS_ELSEWHERE',
      `The durable models (model DurableRun) are defined in ${copies.map((c) => shown(root, c.path)).join(', ')}. ` +
        `nestjs-durable keeps them in one file of their own, durable.prisma: remove them from ` +
        `${copies.length > 1 ? 'all but one of these files' : 'that file'} and run init again.`,
    );
  }
  return copies[0];
}

/** What to do with an app's durable.prisma that differs from the package's: replace it (why), keep it (note), or refuse. */
function upgradeStep(name: string, from: number, to: number, upgrade: boolean): { change: string } | { note: string } {
  if (from > to) {
    throw new InitError(
      'DURABLE_PRISMA_NEWER',
      `${name} is schema version ${from}, newer than this nestjs-durable's (${to}). ` +
        `Upgrade the package (npm install nestjs-durable@latest) and run init --upgrade with it.`,
    );
  }
  if (upgrade) return { change: from === to ? `replaced by the package's copy (schema version ${to})` : `schema version ${from} → ${to}` };
  if (from < to) {
    throw new InitError(
      'DURABLE_PRISMA_OUTDATED',
      `${name} is schema version ${from}; this nestjs-durable ships version ${to}. ` +
        `Run \`npx nestjs-durable init --upgrade\` to replace it, then \`npx prisma migrate dev --name durable_v${to}\`.`,
    );
  }
  return {
    note: `${name} differs from the package's copy (same schema version ${to}: edited or reformatted); left as it is. \`npx nestjs-durable init --upgrade\` replaces it.`,
  };
}

/**
 * A single schema file's folder becomes the schema folder only if Prisma would then read nothing
 * else: not the app's root (node_modules), no other .prisma file, no prisma-client-js output inside
 * (that generator writes a schema.prisma into its output).
 */
function checkFolderCanBeSchema(project: PrismaProject, folder: string): void {
  const { root, schema } = project;
  const file = shown(root, schema.path);
  const reason = whyNotSchemaFolder(project, folder);
  if (!reason) return;
  throw new InitError(
    'SCHEMA_FOLDER_UNSAFE',
    `${file} is a single file; nestjs-durable needs a schema folder (Prisma reads every .prisma file in it), but ${shown(root, folder)}/ ` +
      `cannot be that folder: ${reason}. Move ${file} into a folder of its own (for example prisma/schema/), point ` +
      `\`schema\` in prisma.config.ts at that folder, keep your migrations where they are with \`migrations: { path: … }\`, ` +
      `adjust the generator's relative \`output\`, then run init again.`,
  );
}

function whyNotSchemaFolder({ root, schema }: PrismaProject, folder: string): string | null {
  if (folder === root || existsSync(join(folder, 'node_modules'))) {
    return `it is the app's folder (Prisma would also read every .prisma file under node_modules)`;
  }
  const others = prismaFilesIn(folder).filter((f) => f !== schema.path);
  if (others.length) return `Prisma would also read ${others.map((o) => shown(root, o)).join(', ')}`;
  const text = readFileSync(schema.path, 'utf8');
  const inside = findGenerators(text)
    .filter((g) => g.provider === 'prisma-client-js')
    .map((g) => /^[ \t]*output[ \t]*=[ \t]*"([^"]*)"/m.exec(text.slice(g.open, g.close))?.[1])
    .filter((o): o is string => !!o && !relative(folder, join(folder, o)).startsWith('..'));
  if (inside.length) {
    return `the prisma-client-js generator writes its client (with a schema.prisma) into ${inside.map((o) => shown(root, join(folder, o))).join(', ')}, inside it`;
  }
  return null;
}

/** The config (or Prisma 6's package.json) change that makes Prisma read the folder instead of the file. */
function pointPrismaAt(project: PrismaProject, folder: string): FileChange {
  const { root, config, packageJson, schema } = project;
  const why = `the schema becomes the folder ${shown(root, folder)}/, so Prisma also reads durable.prisma`;
  if (config) {
    const value = shown(dirname(config.path), folder);
    return { path: config.path, before: config.text, after: withConfigSchema(config.text, shown(root, config.path), value), why };
  }
  if (packageJson && schema.source === 'package.json') {
    const indent = /^[ \t]+/m.exec(packageJson.text)?.[0] ?? '  ';
    const data = { ...packageJson.data, prisma: { ...packageJson.data.prisma, schema: shown(root, folder) } };
    return { path: packageJson.path, before: packageJson.text, after: `${JSON.stringify(data, null, indent)}\n`, why };
  }
  throw new InitError(
    'NO_CONFIG',
    `No Prisma config file in ${root}, and nestjs-durable needs the schema to be a folder, which Prisma 7 reads from ` +
      `prisma.config.ts. Create one with \`schema: '${shown(root, folder)}'\` (see https://pris.ly/d/config-reference; ` +
      `Prisma 6 without a config file: set "prisma": { "schema": "${shown(root, folder)}" } in package.json) and run init again.`,
  );
}

/** previewFeatures += partialIndexes in every prisma-client / prisma-client-js generator of the schema. */
function enablePartialIndexes(root: string, files: { path: string; text: string }[]): FileChange[] {
  const changes: FileChange[] = [];
  const others: string[] = [];
  let clientGenerators = 0;
  for (const f of files) {
    const generators = findGenerators(f.text);
    const clients = generators.filter((g) => CLIENT_PROVIDERS.includes(g.provider ?? ''));
    for (const g of generators.filter((g) => !clients.includes(g))) others.push(`"${g.provider ?? '?'}" in ${shown(root, f.path)}`);
    clientGenerators += clients.length;
    // From the last generator back, so the offsets of earlier ones stay valid.
    const after = clients.reduceRight((text, g) => withPreviewFeature(text, g, PARTIAL_INDEXES), f.text);
    if (after !== f.text) {
      const names = clients.map((g) => `"${g.name}"`).join(', ');
      changes.push({
        path: f.path,
        before: f.text,
        after,
        why: `previewFeatures += "${PARTIAL_INDEXES}" in generator ${names} (the claim indexes are partial)`,
      });
    }
  }
  if (clientGenerators === 0) {
    throw new InitError(
      'UNKNOWN_GENERATOR',
      `No generator with provider ${CLIENT_PROVIDERS.map((p) => `"${p}"`).join(' or ')} in the schema ` +
        `(${others.length ? `found only ${others.join(', ')}` : 'no generator block at all'}). nestjs-durable needs the Prisma client ` +
        `generator, with previewFeatures = ["${PARTIAL_INDEXES}"]: add it and run init again.`,
    );
  }
  return changes;
}
