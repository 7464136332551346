#!/usr/bin/env node
// Runs the repository's Prisma CLI from the repository root. Prisma downloads its native schema
// engine on first use; set PRISMA_SCHEMA_ENGINE_BINARY to a schema engine binary where that
// download cannot work (Prisma reads the variable itself).
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'node_modules', 'prisma', 'build', 'index.js');
const r = spawnSync(process.execPath, [cli, ...process.argv.slice(2)], { stdio: 'inherit', cwd: root });
process.exit(r.status ?? 1);
