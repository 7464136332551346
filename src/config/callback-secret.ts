import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The key callback URLs are signed with: CALLBACK_SECRET, else one made up once and kept in
 * `file` (.data/callback-secret), so that a URL handed out before a restart still works after it
 * (a made-up key per start would void them). Instances on other machines need CALLBACK_SECRET.
 */
export function callbackSecret(fromEnv: string | undefined, file = '.data/callback-secret'): string {
  if (fromEnv) return fromEnv;
  try {
    const kept = readFileSync(file, 'utf8').trim();
    if (kept.length >= 32) return kept;
  } catch {
    // none yet
  }
  const made = randomBytes(32).toString('base64url');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, made, { mode: 0o600 });
  return made;
}
