#!/usr/bin/env node
// Runs the Prisma CLI. Prisma downloads its native schema engine on first use; where that
// download cannot work (no internet) and the offline drop-in engine of this workspace exists
// at ../shared/prisma-offline/schema-engine, it is used instead. With internet nothing changes.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const env = { ...process.env };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY) {
  const enginesDir = join(root, 'node_modules', '@prisma', 'engines');
  const hasNative = existsSync(enginesDir) && readdirSync(enginesDir).some((f) => f.startsWith('schema-engine-'));
  const offline = resolve(root, '..', 'shared', 'prisma-offline', 'schema-engine');
  if (!hasNative && existsSync(offline)) env.PRISMA_SCHEMA_ENGINE_BINARY = offline;
}
const cli = join(root, 'node_modules', 'prisma', 'build', 'index.js');
const r = spawnSync(process.execPath, [cli, ...process.argv.slice(2)], { stdio: 'inherit', env, cwd: root });
process.exit(r.status ?? 1);
