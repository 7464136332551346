import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

/**
 * The published package: `npm pack` of libs/durable installs into an unrelated Nest app (its own
 * folder, its own node_modules), whose Prisma schema takes durable.prisma from the package, and
 * which compiles against the shipped types and runs a workflow.
 */
const root = process.cwd();
const run = (cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) =>
  execFileSync(cmd, args, { cwd, env: { ...process.env, NODE_OPTIONS: '', ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

const APP = `
import 'reflect-metadata';
import { Inject, Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { PrismaPg } from '@prisma/adapter-pg';
import { Durable, DurableModule, Step, Workflow, WorkflowClient } from 'nestjs-durable';
import { PrismaClient } from './generated/client.js';

@Injectable()
class PrismaService extends PrismaClient {
  constructor() {
    super({ adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL! }) });
  }
}

@Injectable()
class Greeter {
  @Step() async greet(name: string) {
    return 'hello ' + name;
  }
  @Workflow() async welcome(input: { name: string }) {
    const text = await this.greet(input.name);
    return { text, runId: Durable.runId() };
  }
}

@Module({ imports: [DurableModule.forRoot({ prisma: PrismaService, pollIntervalMs: 100 })], providers: [PrismaService, Greeter] })
class AppModule {}

const app = await NestFactory.createApplicationContext(AppModule, { logger: false });
await app.init();
const client = app.get(WorkflowClient);
const handle = await client.start<{ text: string }>('welcome', { name: 'packed app' });
const out = await handle.result({ timeoutMs: 10_000 });
console.log(JSON.stringify(out));
await app.close();
`;

describe('npm package', () => {
  let dir: string;
  let db: TestDatabase;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'durable-pack-'));
    db = await createTestDatabase('pack');
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await db.drop();
  });

  it('packs with its types and Prisma models, and works in an unrelated Nest app', () => {
    // Build a copy of the package outside the repo (other tests may be using libs/durable/dist).
    const pkg = join(dir, 'pkg');
    const lib = join(root, 'libs/durable');
    run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(lib, 'tsconfig.lib.json'), '--outDir', join(pkg, 'dist')], root);
    cpSync(join(lib, 'src/admin/dashboard'), join(pkg, 'dist/admin/dashboard'), { recursive: true });
    for (const f of ['package.json', 'README.md', 'prisma']) cpSync(join(lib, f), join(pkg, f), { recursive: true });
    const [packed] = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], pkg));
    const files = packed.files.map((f: { path: string }) => f.path);
    expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'prisma/durable.prisma', 'package.json']));
    expect(files.filter((f: string) => /\.spec\.|^src\/|^test\//.test(f))).toEqual([]);

    const app = join(dir, 'app');
    mkdirSync(join(app, 'prisma'), { recursive: true });
    const rootPkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    const dep = (name: string) => rootPkg.dependencies[name] ?? rootPkg.devDependencies[name];
    writeFileSync(join(app, 'package.json'), JSON.stringify({
      name: 'unrelated-app', private: true, type: 'module',
      dependencies: Object.fromEntries(['@nestjs/common', '@nestjs/core', '@prisma/client', '@prisma/adapter-pg', 'reflect-metadata', 'rxjs', 'pg'].map((n) => [n, dep(n)])),
    }));
    run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', join(dir, packed.filename)], app);

    // The documented install step: the package's models go into the app's schema folder.
    copyFileSync(join(app, 'node_modules/nestjs-durable/prisma/durable.prisma'), join(app, 'prisma/durable.prisma'));
    writeFileSync(join(app, 'prisma/schema.prisma'), `generator client {
  provider            = "prisma-client"
  output              = "../src/generated"
  previewFeatures     = ["partialIndexes"]
  moduleFormat        = "esm"
  importFileExtension = "js"
}
datasource db {
  provider = "postgresql"
}
`);
    writeFileSync(join(app, 'prisma.config.ts'), `export default { schema: 'prisma' };\n`);
    run(process.execPath, [join(root, 'scripts/prisma.mjs'), 'generate', '--schema', join(app, 'prisma')], root);

    mkdirSync(join(app, 'src'), { recursive: true });
    writeFileSync(join(app, 'src/main.ts'), APP);
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'ES2022', module: 'ESNext', moduleResolution: 'bundler', strict: true, experimentalDecorators: true,
        emitDecoratorMetadata: true, skipLibCheck: true, outDir: 'dist', rootDir: 'src', types: [],
      },
      include: ['src'],
    }));
    run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', app], app);
    const out = run(process.execPath, [join(app, 'dist/main.js')], app, { DATABASE_URL: db.url });
    expect(JSON.parse(out.trim().split('\n').pop()!)).toMatchObject({ text: 'hello packed app' });
  }, 240_000);
});
