#!/usr/bin/env node
// `npm start`: runs the example shop (src/). Generates the Prisma client if it is missing,
// builds the library and the app with tsc (`npm run build`), then runs dist/src/main.js in
// this process. Without DATABASE_URL the app starts an embedded Postgres (see README).
// Why tsc and not tsx: tsx (esbuild) emits no decorator metadata. The example injects
// everything with explicit @Inject() and would run under tsx, but the usual Nest app injects by
// constructor type, and `npm start` should run the example the way a Nest app is built.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function step(title, command, args) {
  const started = Date.now();
  process.stdout.write(`[start] ${title}…\n`);
  const r = spawnSync(command, args, { cwd: root, stdio: 'inherit', env: process.env });
  if (r.status !== 0) {
    process.stderr.write(`[start] ${title} failed (exit ${r.status ?? r.signal}).\n`);
    process.exit(r.status || 1);
  }
  process.stdout.write(`[start] ${title}: done in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
}

if (!existsSync(join(root, 'node_modules', '.bin', 'tsc'))) {
  process.stderr.write('[start] dependencies are missing: run `npm install` first.\n');
  process.exit(1);
}
if (!existsSync(join(root, 'src', 'generated', 'prisma', 'client.ts'))) {
  step('generating the Prisma client (prisma generate)', process.execPath, [join(root, 'scripts', 'prisma.mjs'), 'generate']);
}
step('building the library and the example (npm run build)', npm, ['run', '--silent', 'build']);

process.stdout.write(`[start] starting the example: node dist/src/main.js${process.env.DATABASE_URL ? '' : ' (no DATABASE_URL: embedded Postgres)'}\n`);
process.chdir(root);
await import(pathToFileURL(join(root, 'dist', 'src', 'main.js')).href);
