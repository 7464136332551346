// No words about how the project was built, and no paths of the machines it was built on, in the
// repository: the product speaks about the product. (.ci/run is the one place that may point at
// a machine's offline Prisma engine.) A database or HTTP session is of course fine: the patterns
// are the build's own phrases.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, trackedFiles } from './markdown.js';

// Written in pieces, so that this file itself passes the same search run with grep over the tree.
const words = (...parts: string[]) => parts.join('');
const patterns: RegExp[] = [
  new RegExp(words('sess', 'ion [0-9]'), 'i'),
  new RegExp(words('this ', 'session'), 'i'),
  new RegExp(words('\\b', 'sit', 'ting\\b'), 'i'),
  new RegExp(words('this ', 'box'), 'i'),
  new RegExp(words('this ', 'workspace'), 'i'),
  new RegExp(words('\\.\\.', '\\/sha', 'red\\b')),
];
const allowed = new Set(['.ci/run']);

export function processWords(files: string[], textOf = (f: string) => readFileSync(join(repoRoot, f), 'utf8')): string[] {
  const hits: string[] = [];
  for (const f of files) {
    if (allowed.has(f)) continue;
    const text = textOf(f);
    if (text.includes('\u0000')) continue; // binary
    text.split('\n').forEach((line, i) => {
      for (const p of patterns) if (p.test(line)) hits.push(`${f}:${i + 1}: ${p.source}: ${line.trim().slice(0, 120)}`);
    });
  }
  return hits;
}

describe('no process words in the repository', () => {
  it('finds each pattern', () => {
    const probe = [
      words('Figures of sess', 'ion 12'),
      words('done in this ', 'session'),
      words('one sit', 'ting'),
      words('on this ', 'box'),
      words('in this ', 'workspace'),
      words('../sha', 'red/x'),
    ];
    expect(processWords(['probe.md'], () => probe.join('\n'))).toHaveLength(6);
    expect(processWords(['probe.md'], () => 'a database session, an HTTP session, shared/x')).toEqual([]);
  });

  it('no tracked file outside .ci/run has one', () => {
    expect(processWords(trackedFiles())).toEqual([]);
  });
});
