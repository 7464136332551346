import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** The library's source folder. */
export const LIBRARY_SRC = join(process.cwd(), 'libs', 'durable', 'src');

/** Every source file of the library under `dir` (specs excluded). */
export function* librarySources(dir: string = LIBRARY_SRC): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* librarySources(p);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts')) yield p;
  }
}
