// A fingerprint of source files, for skipping a build step whose inputs did not change.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** sha256 over the paths and contents of every file under `paths` (files or folders), in a stable order. */
export function sourceHash(root, paths) {
  const hash = createHash('sha256');
  const visit = (path) => {
    if (!existsSync(path)) return;
    if (statSync(path).isDirectory()) {
      for (const name of readdirSync(path).sort()) visit(join(path, name));
      return;
    }
    hash.update(relative(root, path)).update('\0').update(readFileSync(path)).update('\0');
  };
  for (const p of paths) visit(join(root, p));
  return hash.digest('hex');
}

/** Is the hash stored in `stampFile` this one? */
export function stampMatches(stampFile, hash) {
  try {
    return readFileSync(stampFile, 'utf8') === hash;
  } catch {
    return false;
  }
}

export function writeStamp(stampFile, hash) {
  writeFileSync(stampFile, hash);
}
