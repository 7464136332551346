// No words about how the project was built, and no paths of the machines it was built on, in the
// repository: the product speaks about the product. (.ci/run is the one place that may point at
// a machine's offline Prisma engine.) A database or HTTP session is of course fine: the patterns
// are the build's own phrases.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, trackedFiles } from './markdown.js';

const patterns: RegExp[] = [/session [0-9]/i, /this session/i, /\bsitting\b/i, /this box/i, /this workspace/i, /\.\.\/shared\b/];
const allowed = new Set(['.ci/run', 'test/docs/process-words.spec.ts']);

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
    const probe = ['Figures of session 12', 'done in this session', 'one sitting', 'on this box', 'in this workspace', '../shared/x'];
    expect(processWords(['probe.md'], () => probe.join('\n'))).toHaveLength(6);
    expect(processWords(['probe.md'], () => 'a database session, an HTTP session, shared/x')).toEqual([]);
  });

  it('no tracked file outside .ci/run has one', () => {
    expect(processWords(trackedFiles())).toEqual([]);
  });
});
