// Every relative link and #anchor of the documentation resolves: to a file of the repository, and
// to a heading of it as GitHub names its anchors. Links are resolved from the linking file's own
// folder (libs/durable/README.md's ../../docs/… also work from the repository).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { githubSlug, headingSlugs, linksOf, rel, trackedMarkdown, userDocs } from './markdown.js';

function brokenLinks(files: string[], textOf = (file: string) => readFileSync(file, 'utf8')): string[] {
  const broken: string[] = [];
  const slugsOf = new Map<string, Set<string>>();
  const slugs = (file: string) => {
    if (!slugsOf.has(file)) slugsOf.set(file, headingSlugs(textOf(file)));
    return slugsOf.get(file)!;
  };
  for (const file of files) {
    for (const { line, target } of linksOf(file, textOf(file))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // http:, mailto:, …
      const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined];
      const path = decodeURIComponent(pathPart);
      const dest = path === '' ? file : resolve(dirname(file), path);
      const at = `${rel(file)}:${line}: ${target}`;
      if (path !== '' && !existsSync(dest)) {
        broken.push(`${at} (no such file)`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!dest.endsWith('.md') || (path !== '' && statSync(dest).isDirectory())) {
        broken.push(`${at} (an anchor into something that is not a markdown file)`);
        continue;
      }
      if (!slugs(dest).has(decodeURIComponent(anchor))) broken.push(`${at} (no heading with the anchor #${anchor} in ${rel(dest)})`);
    }
  }
  return broken;
}

describe('links of the documentation', () => {
  it('names anchors as GitHub does', () => {
    expect(githubSlug('Compensation (sagas)')).toBe('compensation-sagas');
    expect(githubSlug('`DurableModule.forRoot(options)`')).toBe('durablemoduleforrootoptions');
    expect(githubSlug('Telemetry: traces, metrics, lifecycle hooks, logs')).toBe('telemetry-traces-metrics-lifecycle-hooks-logs');
    expect([...headingSlugs('# A\n## A\n```\n# not a heading\n```\n## 3. `verify` before\n')]).toEqual(['a', 'a-1', '3-verify-before']);
  });

  it('every relative link and anchor of README.md, libs/durable/README.md and docs/ resolves', () => {
    expect(brokenLinks(userDocs())).toEqual([]);
  });

  it('every relative link of the other tracked markdown files resolves', () => {
    const docs = new Set(userDocs());
    expect(brokenLinks(trackedMarkdown().filter((f) => !docs.has(f)))).toEqual([]);
  });

  it('catches a broken file, a broken anchor and an anchor into another page', () => {
    const probe = resolve('docs/probe.md');
    const text = '# Probe\n[ok](#probe) [a](nothing-here.md) [b](#no-such-heading) [c](../README.md#no-such-heading) `[d](x.md)`\n';
    expect(brokenLinks([probe], () => text)).toEqual([
      'docs/probe.md:2: nothing-here.md (no such file)',
      'docs/probe.md:2: #no-such-heading (no heading with the anchor #no-such-heading in docs/probe.md)',
      'docs/probe.md:2: ../README.md#no-such-heading (no heading with the anchor #no-such-heading in README.md)',
    ]);
  });
});
