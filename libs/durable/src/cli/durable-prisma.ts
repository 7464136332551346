import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { InitError } from './init-error.js';
import { topLevelBlocks } from './generator-block.js';

/** The durable.prisma this package ships (dist/cli/ and src/cli/ are both two levels below it). */
export const PACKAGE_DURABLE_PRISMA = fileURLToPath(new URL('../../prisma/durable.prisma', import.meta.url));
/** The same models for Prisma's mysql provider (MariaDB 10.6+). */
export const PACKAGE_DURABLE_MYSQL_PRISMA = fileURLToPath(new URL('../../prisma/durable.mysql.prisma', import.meta.url));

export function readPackageDurablePrisma(path = PACKAGE_DURABLE_PRISMA): string {
  if (!existsSync(path)) {
    throw new InitError(
      'PACKAGE_FILE_MISSING',
      `${path} is missing: the nestjs-durable package is incomplete. Reinstall it (npm install nestjs-durable).`,
    );
  }
  return readFileSync(path, 'utf8');
}

/** The schema version a durable.prisma declares: the DEFAULT of DurableSchema.version, 1 before that model existed. */
export function durablePrismaVersion(text: string): number {
  const m = /model\s+DurableSchema\s*\{[^}]*?\bversion\s+Int\s+@id\s+@default\((\d+)\)/.exec(text);
  return m ? Number(m[1]) : 1;
}

/** Whether a .prisma file defines the durable models (model DurableRun). */
export function hasDurableModels(text: string): boolean {
  return topLevelBlocks(text).some((b) => b.keyword === 'model' && b.name === 'DurableRun');
}

/** Whether every block of the file is a Durable* model: a copy of durable.prisma, possibly edited or reformatted. */
export function isDurableOnly(text: string): boolean {
  return topLevelBlocks(text).every((b) => b.keyword === 'model' && b.name.startsWith('Durable'));
}
