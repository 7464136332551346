import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DASHBOARD_FILES } from '../../libs/durable/src/admin/dashboard-assets.js';

/**
 * The dashboard is written in one style: ES modules that import one another (no classic script,
 * no global on `window`), type-checked (`// @ts-check`, npm run typecheck), without import cycles,
 * and every file of it served.
 */
const DIR = join(process.cwd(), 'libs/durable/src/admin/dashboard');
const files = readdirSync(DIR);
const scripts = files.filter((f) => f.endsWith('.js'));
const source = (f: string) => readFileSync(join(DIR, f), 'utf8');
const imports = (f: string) => [...source(f).matchAll(/^import [^;]*? from '\.\/([\w-]+\.js)';/gm)].map((m) => m[1]);

describe('dashboard modules', () => {
  it('serves every file of the folder, and only those', () => {
    expect(Object.keys(DASHBOARD_FILES).sort()).toEqual([...files].sort());
  });

  it('loads one module entry and no classic script', () => {
    const html = source('index.html');
    expect([...html.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual(['<script type="module" src="assets/dashboard.js">']);
  });

  it.each(scripts)('%s is a type-checked module that puts nothing on window', (f) => {
    const text = source(f);
    expect(text.startsWith('// @ts-check\n')).toBe(true);
    expect(text).not.toMatch(/window\.Durable|\(function \(\) \{\s*'use strict'/);
    for (const dep of imports(f)) expect(scripts).toContain(dep);
  });

  it('has no import cycle', () => {
    const cycles: string[] = [];
    const done = new Set<string>();
    const visit = (f: string, path: string[]) => {
      if (path.includes(f)) return void cycles.push([...path.slice(path.indexOf(f)), f].join(' → '));
      if (done.has(f)) return;
      for (const dep of imports(f)) visit(dep, [...path, f]);
      done.add(f);
    };
    scripts.forEach((f) => visit(f, []));
    expect(cycles).toEqual([]);
  });
});
