#!/usr/bin/env node
// `npm start`: runs the example shop (src/). Builds only what changed, then runs dist/src/main.js
// in this process. Without DATABASE_URL the app uses an embedded Postgres (see README).
//   - Prisma clients: `prisma generate` when a schema folder or package-lock.json changed (or the
//     client is missing): prisma/schema (PostgreSQL) and prisma/mysql (MariaDB; the app picks one by
//     DATABASE_URL).
//   - The library: its own build (`npm run build -w nestjs-durable`) when its sources (or
//     package-lock.json) changed;
//     the fingerprint of those sources is kept in libs/durable/dist, so deleting dist rebuilds.
//   - The app: `tsc -b tsconfig.build.json`, incremental (dist/tsconfig.build.tsbuildinfo): a
//     restart with no change checks timestamps and compiles nothing; the app type-checks against
//     the built library's declarations, not its sources.
// Why tsc and not tsx: tsx (esbuild) emits no decorator metadata. The example injects
// everything with explicit @Inject() and would run under tsx, but the usual Nest app injects by
// constructor type, and `npm start` should run the example the way a Nest app is built.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { sourceHash, stampMatches, writeStamp } from './source-hash.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const started = Date.now();

function step(title, command, args) {
  const t0 = Date.now();
  process.stdout.write(`[start] ${title}…\n`);
  const r = spawnSync(command, args, { cwd: root, stdio: 'inherit', env: process.env });
  if (r.status !== 0) {
    process.stderr.write(`[start] ${title} failed (exit ${r.status ?? r.signal}).\n`);
    process.exit(r.status || 1);
  }
  process.stdout.write(`[start] ${title}: done in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
}

/**
 * Runs `build` unless its `output` exists and the fingerprint of `inputs` is the one stored by
 * the last build, in `stamp` (inside the build's output, so deleting the output rebuilds).
 */
function unlessUnchanged(what, inputs, { output, stamp }, build) {
  const hash = sourceHash(root, inputs);
  if (existsSync(join(root, output)) && stampMatches(join(root, stamp), hash)) return process.stdout.write(`[start] ${what}: unchanged\n`);
  build();
  writeStamp(join(root, stamp), hash);
}

if (!existsSync(join(root, 'node_modules', '.bin', 'tsc'))) {
  process.stderr.write('[start] dependencies are missing: run `npm install` first.\n');
  process.exit(1);
}
unlessUnchanged(
  'Prisma client',
  ['prisma/schema', 'prisma.config.ts', 'package-lock.json'],
  { output: 'src/generated/prisma/client.ts', stamp: 'src/generated/prisma/.schema-hash' },
  () => step('generating the Prisma client (prisma generate)', process.execPath, [join(root, 'scripts', 'prisma.mjs'), 'generate']),
);
unlessUnchanged(
  'Prisma client for MariaDB',
  ['prisma/mysql', 'libs/durable/prisma/durable.mysql.prisma', 'package-lock.json'],
  { output: 'src/generated/mysql-prisma/client.ts', stamp: 'src/generated/mysql-prisma/.schema-hash' },
  () =>
    step('generating the MariaDB Prisma client (prisma generate --schema prisma/mysql)', process.execPath, [
      join(root, 'scripts', 'prisma.mjs'),
      'generate',
      '--schema',
      'prisma/mysql',
    ]),
);
unlessUnchanged(
  'library (libs/durable)',
  ['libs/durable/src', 'libs/durable/package.json', 'libs/durable/tsconfig.lib.json', 'tsconfig.json', 'package-lock.json'],
  { output: 'libs/durable/dist/index.js', stamp: 'libs/durable/dist/.source-hash' },
  () => step('building the library (npm run build -w nestjs-durable)', npm, ['run', '--silent', 'build', '-w', 'nestjs-durable']),
);
step('building the example (tsc -b tsconfig.build.json)', join(root, 'node_modules', '.bin', 'tsc'), ['-b', 'tsconfig.build.json']);

process.stdout.write(
  `[start] built in ${((Date.now() - started) / 1000).toFixed(1)} s; starting the example: node dist/src/main.js${process.env.DATABASE_URL ? '' : ' (no DATABASE_URL: embedded Postgres)'}\n`,
);
process.chdir(root);
await import(pathToFileURL(join(root, 'dist', 'src', 'main.js')).href);
