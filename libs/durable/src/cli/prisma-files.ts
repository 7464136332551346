import { readdirSync, realpathSync, statSync } from 'node:fs';
import { extname, join } from 'node:path';

/**
 * Every .prisma file Prisma reads from a schema folder: recursively, following symbolic links,
 * each real directory once (what Prisma's loadSchemaFiles does).
 */
export function prismaFilesIn(folder: string, seen = new Set<string>()): string[] {
  const real = realpathSync(folder);
  if (seen.has(real)) return [];
  seen.add(real);
  const files: string[] = [];
  for (const name of readdirSync(folder).sort()) {
    const path = join(folder, name);
    const stat = statSync(path, { throwIfNoEntry: false });
    if (stat?.isDirectory()) files.push(...prismaFilesIn(path, seen));
    else if (stat?.isFile() && extname(name) === '.prisma') files.push(path);
  }
  return files;
}
