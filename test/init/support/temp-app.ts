import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runInit } from '../../../libs/durable/src/cli/init-command.js';

const root = process.cwd();

/** A throwaway app folder with the given files; node_modules links to the repository's (Prisma CLI and config). */
export function tempApp(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'durable-init-'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

export const removeApp = (dir: string) => rmSync(dir, { recursive: true, force: true });

/** Every file of the app but node_modules, by relative path: compare two of these to prove nothing changed. */
export function appFiles(dir: string, sub = ''): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of readdirSync(join(dir, sub)).sort()) {
    const path = join(sub, name);
    if (path === 'node_modules') continue;
    if (statSync(join(dir, path)).isDirectory()) Object.assign(files, appFiles(dir, path));
    else files[path] = readFileSync(join(dir, path), 'utf8');
  }
  return files;
}

export interface Ran {
  code: number;
  out: string;
  err: string;
}

/** `nestjs-durable <args>` in the app's folder, in this process. */
export function cli(dir: string, ...args: string[]): Ran {
  let out = '';
  let err = '';
  const code = runInit(args, { cwd: dir, out: (t) => (out += `${t}\n`), err: (t) => (err += `${t}\n`) });
  return { code, out, err };
}

/** The command's result when it exited 0; otherwise an error with everything it printed. */
export function ok(r: Ran): Ran {
  if (r.code !== 0) throw new Error(`exit code ${r.code}\n${r.err}\n${r.out}`);
  return r;
}

/** Runs a command to its end without throwing on a non-zero exit. */
export function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return new Promise((done) => {
    execFile(cmd, args, { cwd, env: { ...process.env, NODE_OPTIONS: '', ...env }, maxBuffer: 1 << 24 }, (error, stdout, stderr) =>
      done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, out: stdout, err: stderr }),
    );
  });
}

/**
 * The repository's Prisma CLI in the app's folder. It inherits PRISMA_SCHEMA_ENGINE_BINARY from the
 * environment, as scripts/prisma.mjs does, for machines where Prisma cannot download its engine.
 */
export function prisma(dir: string, args: string[], databaseUrl?: string): Promise<Ran> {
  const env: NodeJS.ProcessEnv = databaseUrl ? { DATABASE_URL: databaseUrl } : {};
  return run(process.execPath, [join(root, 'node_modules', 'prisma', 'build', 'index.js'), ...args], dir, env);
}

/** The migrations of the app, by folder name. */
export function migrationsOf(dir: string, folder = 'prisma/migrations'): Record<string, string> {
  const path = join(dir, folder);
  if (!existsSync(path)) return {};
  return Object.fromEntries(
    readdirSync(path)
      .filter((m) => statSync(join(path, m)).isDirectory())
      .map((m) => [m, readFileSync(join(path, m, 'migration.sql'), 'utf8')]),
  );
}
