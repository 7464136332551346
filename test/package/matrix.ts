import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';

/**
 * The consumer matrix's machinery: pack the library as npm would publish it, and give each
 * fixture app (test/package/apps/<name>) a fresh folder with its dependencies installed from its
 * committed lockfile. `npm ci` of a fixture runs once per lockfile: its node_modules is kept in a
 * cache outside the repo and hard-linked into each fresh app, then the packed tarball is installed
 * on top with `npm install <tarball>`, exactly as the README tells a user to.
 */
export const ROOT = process.cwd();
export const APPS = join(ROOT, 'test/package/apps');

/** `DURABLE_MATRIX_CACHE`, or ~/.cache/nestjs-durable-matrix. Delete it to measure a cold run. */
export const CACHE =
  process.env.DURABLE_MATRIX_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'nestjs-durable-matrix');

/** Runs a command; on failure the error carries its output (the test report shows why). */
export function sh(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 600_000): string {
  try {
    return execFileSync(cmd, args, {
      cwd,
      env: { ...process.env, NODE_OPTIONS: '', ...env },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (e) {
    const err = e as { status?: number; signal?: string; stdout?: string; stderr?: string };
    throw new Error(
      `${cmd} ${args.join(' ')} (in ${cwd}) failed: status ${err.status} ${err.signal ?? ''}\n${err.stdout ?? ''}\n${err.stderr ?? ''}`,
    );
  }
}

/** Like sh, but returns the status and output instead of throwing (for expected failures). */
export function shStatus(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): { status: number; output: string } {
  try {
    return { status: 0, output: sh(cmd, args, cwd, env) };
  } catch (e) {
    return { status: Number(/status (\d+)/.exec((e as Error).message)?.[1] ?? 1), output: (e as Error).message };
  }
}

export const npm = (args: string[], cwd: string) => sh('npm', [...args, '--no-audit', '--no-fund'], cwd);

/**
 * Builds libs/durable into a copy outside the repo (other tests may be reading libs/durable/dist)
 * and packs it. Returns the tarball's path and the files it holds.
 */
export function packLibrary(into: string): { tarball: string; files: string[]; cached: boolean } {
  // The tarball of these exact sources (with this compiler) is built once: the consumer tests of
  // one run (and later runs on unchanged sources) install copies of it.
  const cached = join(CACHE, `tarball-${librarySourcesKey()}`);
  if (existsSync(join(cached, 'files.json'))) {
    const { filename, files } = JSON.parse(readFileSync(join(cached, 'files.json'), 'utf8')) as { filename: string; files: string[] };
    copyFileSync(join(cached, filename), join(into, filename));
    return { tarball: join(into, filename), files, cached: true };
  }
  const built = buildAndPack(into);
  const tmp = `${cached}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  copyFileSync(built.tarball, join(tmp, built.filename));
  writeFileSync(join(tmp, 'files.json'), JSON.stringify({ filename: built.filename, files: built.files }));
  try {
    renameSync(tmp, cached); // atomic: a concurrent run either sees the whole folder or none
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another run got there first
  }
  return { tarball: built.tarball, files: built.files, cached: false };
}

/** What the tarball is made of: the library's files, the root tsconfig its build extends, and the TypeScript version. */
function librarySourcesKey(): string {
  const lib = join(ROOT, 'libs/durable');
  const files = ['src', 'prisma']
    .flatMap((d) => readdirSync(join(lib, d), { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .concat(
      ['package.json', 'README.md', 'LICENSE', 'tsconfig.lib.json'].map((f) => join(lib, f)),
      join(ROOT, 'tsconfig.json'),
    )
    .concat(join(ROOT, 'node_modules/typescript/package.json'))
    .sort();
  const hash = createHash('sha256');
  for (const f of files) hash.update(relative(ROOT, f)).update(readFileSync(f));
  return hash.digest('hex').slice(0, 16);
}

function buildAndPack(into: string): { tarball: string; filename: string; files: string[] } {
  const pkg = join(into, 'pkg');
  const lib = join(ROOT, 'libs/durable');
  sh(
    process.execPath,
    [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(lib, 'tsconfig.lib.json'), '--outDir', join(pkg, 'dist')],
    ROOT,
  );
  cpSync(join(lib, 'src/admin/dashboard'), join(pkg, 'dist/admin/dashboard'), { recursive: true });
  for (const f of ['package.json', 'README.md', 'LICENSE', 'prisma']) cpSync(join(lib, f), join(pkg, f), { recursive: true });
  const [packed] = JSON.parse(sh('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', into], pkg)) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  return { tarball: join(into, packed.filename), filename: packed.filename, files: packed.files.map((f) => f.path) };
}

/** The fixture's node_modules, from the cache or installed into it now (`npm ci`). */
export function cachedNodeModules(app: string): { dir: string; cold: boolean } {
  const src = join(APPS, app);
  const key = createHash('sha256')
    .update(readFileSync(join(src, 'package.json')))
    .update(readFileSync(join(src, 'package-lock.json')))
    .update(`${process.platform}-${process.arch}-node${process.versions.node.split('.')[0]}`)
    .digest('hex')
    .slice(0, 16);
  const dir = join(CACHE, `${app}-${key}`);
  if (existsSync(join(dir, 'node_modules'))) return { dir: join(dir, 'node_modules'), cold: false };
  mkdirSync(CACHE, { recursive: true });
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp);
  for (const f of ['package.json', 'package-lock.json']) cpSync(join(src, f), join(tmp, f));
  npm(['ci', '--prefer-offline'], tmp);
  try {
    renameSync(tmp, dir); // atomic: a concurrent run either sees the whole folder or none
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another run got there first
  }
  return { dir: join(dir, 'node_modules'), cold: true };
}

/**
 * A fresh folder with the fixture's files, its installed dependencies (hard links into the cache,
 * or a copy across file systems) and the packed library installed the way a user installs it.
 */
export function freshApp(app: string, tarball: string, parent: string): { dir: string; cold: boolean } {
  const dir = mkdtempSync(join(parent, `${app}-`));
  cpSync(join(APPS, app), dir, { recursive: true });
  const modules = cachedNodeModules(app);
  try {
    sh('cp', ['-al', modules.dir, join(dir, 'node_modules')], dir);
    // npm rewrites its hidden lockfile in place: that one file must not be shared with the cache.
    const hidden = join(dir, 'node_modules/.package-lock.json');
    rmSync(hidden);
    copyFileSync(join(modules.dir, '.package-lock.json'), hidden);
  } catch {
    rmSync(join(dir, 'node_modules'), { recursive: true, force: true });
    cpSync(modules.dir, join(dir, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  }
  npm(['install', '--prefer-offline', tarball], dir);
  return { dir, cold: modules.cold };
}

/**
 * The app's own Prisma CLI. Prisma downloads its native schema engine on first use; where that
 * cannot work, PRISMA_SCHEMA_ENGINE_BINARY in the environment (inherited here) points at one.
 */
export function prisma(dir: string, args: string[], databaseUrl: string): string {
  const env: NodeJS.ProcessEnv = { DATABASE_URL: databaseUrl };
  return sh(process.execPath, [join(dir, 'node_modules/prisma/build/index.js'), ...args], dir, env);
}

/** The app's own TypeScript compiler. */
export const tsc = (dir: string, args: string[]) => sh(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), ...args], dir);

export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(resolve(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
}

export const tempRoot = () => mkdtempSync(join(tmpdir(), 'durable-matrix-'));
