import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { LIBRARY_SRC, librarySources } from './library-sources.js';
import { dirname, join, relative, resolve, sep } from 'node:path';

/**
 * The library's layers (libs/durable/ARCHITECTURE.md): a folder imports only from folders of a lower
 * layer, or from itself. The entry points (index.ts, engine.ts) may import anything.
 */
const LAYERS: Record<string, number> = {
  errors: 0,
  'embedded-postgres': 0,
  config: 1,
  codec: 1,
  retry: 2,
  store: 2,
  definitions: 2,
  telemetry: 2,
  workflow: 3,
  decorators: 4,
  worker: 4,
  engine: 5,
  admin: 6,
  cli: 7,
  nest: 7,
  testing: 8,
};
const SRC = LIBRARY_SRC;
const sources = librarySources;
const folderOf = (file: string) => relative(SRC, file).split(sep)[0];

/** The library files a file imports (relative imports, type-only ones included), resolved to their .ts paths. */
function importsOf(file: string): string[] {
  const found: string[] = [];
  for (const m of readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
    const target = resolve(dirname(file), m[1]).replace(/\.js$/, '');
    if (existsSync(`${target}.ts`)) found.push(`${target}.ts`);
    else if (existsSync(join(target, 'index.ts'))) found.push(join(target, 'index.ts'));
  }
  return found;
}

/** The import cycles among `files`: each one a list of files, the first one again at the end. */
function importCycles(files: string[]): string[][] {
  const graph = new Map(files.map((f) => [f, importsOf(f).filter((to) => files.includes(to))]));
  const cycles: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Set<string>();
  const visit = (file: string) => {
    path.push(file);
    onPath.add(file);
    for (const to of graph.get(file) ?? []) {
      if (onPath.has(to)) cycles.push([...path.slice(path.indexOf(to)), to]);
      else if (!done.has(to)) visit(to);
    }
    path.pop();
    onPath.delete(file);
    done.add(file);
  };
  for (const file of files) if (!done.has(file)) visit(file);
  return cycles;
}

describe('library layers', () => {
  const files = [...sources(SRC)];

  it('puts every source file in a known folder (or is an entry point)', () => {
    const stray = files.filter((f) =>
      !relative(SRC, f).includes(sep)
        ? !['index.ts', 'engine.ts', 'testing.ts', 'embedded-postgres.ts'].includes(relative(SRC, f))
        : !(folderOf(f) in LAYERS),
    );
    expect(stray.map((f) => relative(SRC, f))).toEqual([]);
  });

  it('imports only downwards: never from a folder of the same or a higher layer', () => {
    const violations: string[] = [];
    for (const file of files) {
      if (!relative(SRC, file).includes(sep)) continue; // entry points
      const from = folderOf(file);
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
        const to = folderOf(resolve(dirname(file), m[1]));
        if (to === from) continue;
        if (!(to in LAYERS) || LAYERS[to] >= LAYERS[from]) violations.push(`${relative(SRC, file)} → ${m[1]} (${from} → ${to})`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('has no import cycle (type-only imports count: a cycle means two files that belong together or a type in the wrong file)', () => {
    const cycles = importCycles(files).map((cycle) => cycle.map((f) => relative(SRC, f)).join(' → '));
    expect(cycles).toEqual([]);
    expect(importsOf(join(SRC, 'engine', 'new-run.ts'))).toContain(join(SRC, 'engine', 'keyed-start.ts')); // the walk resolves imports
  });

  it('keeps the engine independent of Nest: only nest/ (and the testing kit on top of it) imports @nestjs/*', () => {
    const nestImports = files
      .filter((f) => !['nest', 'testing'].includes(folderOf(f)) && !['index.ts', 'testing.ts'].includes(relative(SRC, f)))
      .filter((f) => /from '@nestjs\//.test(readFileSync(f, 'utf8')))
      .map((f) => relative(SRC, f));
    expect(nestImports).toEqual([]);
  });

  it('loads no test-only code from the main entries: index.ts and engine.ts never reach the testing kit', () => {
    const testOnly = (f: string) =>
      ['testing', 'embedded-postgres'].includes(folderOf(f)) || ['testing.ts', 'embedded-postgres.ts'].includes(relative(SRC, f));
    const reached = new Set<string>();
    const visit = (file: string) => {
      if (reached.has(file)) return;
      reached.add(file);
      for (const m of readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
        visit(resolve(dirname(file), m[1]).replace(/\.js$/, '.ts'));
      }
    };
    visit(join(SRC, 'index.ts'));
    visit(join(SRC, 'engine.ts'));
    expect([...reached].filter(testOnly).map((f) => relative(SRC, f))).toEqual([]);
    expect(reached.size).toBeGreaterThan(50); // the walk did follow the imports
  });
});

describe('ARCHITECTURE.md', () => {
  /** The first cell of every table row whose first cell is a path in backticks: `engine/`, `store/runs.ts`. */
  const rows = [...readFileSync(join(SRC, '..', 'ARCHITECTURE.md'), 'utf8').matchAll(/^\|\s*`([^`]+)`\s*\|/gm)].map((m) => m[1]);
  const folders = readdirSync(SRC, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => `${e.name}/`);
  const storeFiles = readdirSync(join(SRC, 'store'))
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))
    .map((f) => `store/${f}`);

  it('has exactly one row per folder of src/ and per file of store/', () => {
    const count = (path: string) => rows.filter((r) => r === path).length;
    expect([...folders, ...storeFiles].filter((path) => count(path) !== 1).map((path) => `${path}: ${count(path)} rows`)).toEqual([]);
    expect(folders.length).toBeGreaterThan(10); // the walk found the folders
  });

  it('has no row for a folder or store file that does not exist', () => {
    expect(rows.filter((path) => ![...folders, ...storeFiles].includes(path))).toEqual([]);
  });
});

describe('file size', () => {
  /** Every hand-written file of the library: its code, tests beside it, and the dashboard's scripts, styles and page. */
  function* written(dir: string): Generator<string> {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) yield* written(p);
      else if (/\.(ts|js|mjs|css|html)$/.test(e.name)) yield p;
    }
  }

  it('keeps every hand-written file of the library at 400 lines or fewer (one job per file)', () => {
    const files = [...written(SRC)];
    expect(files.filter((f) => f.includes(`${sep}dashboard${sep}`)).length).toBeGreaterThan(10); // the dashboard is in the walk
    const long = files.map((f) => [relative(SRC, f), readFileSync(f, 'utf8').split('\n').length - 1] as const).filter(([, n]) => n > 400);
    expect(long).toEqual([]);
  });
});
