import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** The repository's root (jest runs from it). */
export const repoRoot = process.cwd();

/** The documents a user reads: the two front pages and every page under docs/. */
export function userDocs(): string[] {
  const files = [join(repoRoot, 'README.md'), join(repoRoot, 'libs/durable/README.md')];
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) files.push(path);
    }
  };
  walk(join(repoRoot, 'docs'));
  return files;
}

/** The markdown files git tracks, for the link check of pages outside docs/ (bench/README.md, CHANGELOG). */
export function trackedMarkdown(): string[] {
  return trackedFiles()
    .filter((f) => f.endsWith('.md'))
    .map((f) => join(repoRoot, f));
}

/** Every file git tracks (or would track: new files not yet added count too). */
export function trackedFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: repoRoot }).toString();
  return [...new Set(out.split('\n').filter(Boolean))].filter((f) => existsSync(join(repoRoot, f)));
}

export interface CodeBlock {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The fence's info string, e.g. "ts" or "ts fragment". */
  info: string;
  code: string;
}

/** Fenced code blocks (``` or ~~~) of a markdown text. */
export function codeBlocks(file: string, text = readFileSync(file, 'utf8')): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(.*)$/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, info] = open;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = lines[j].trim();
      if (close.startsWith(fence) && close.replace(/[`~]/g, '') === '') break;
      body.push(lines[j].startsWith(indent) ? lines[j].slice(indent.length) : lines[j]);
    }
    blocks.push({ file, line: i + 1, info: info.trim(), code: body.join('\n') });
    i = j;
  }
  return blocks;
}

/** TypeScript samples that must compile: fences "ts" or "typescript" without the word "fragment". */
export function typeScriptSamples(file: string): CodeBlock[] {
  return codeBlocks(file).filter((b) => {
    const words = b.info.split(/\s+/);
    return (words[0] === 'ts' || words[0] === 'typescript') && !words.includes('fragment');
  });
}

/** The text outside code blocks and inline code, where links are read. */
export function proseOf(text: string, { keepInlineCode = false } = {}): string {
  const lines = text.split('\n');
  const out: string[] = [];
  let fence: string | null = null;
  for (const line of lines) {
    const m = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (m && line.trim().startsWith(fence) && line.trim().replace(/[`~]/g, '') === '') fence = null;
      out.push('');
      continue;
    }
    if (m) {
      fence = m[1];
      out.push('');
      continue;
    }
    out.push(keepInlineCode ? line : line.replace(/(`+)[^`]*?\1/g, ''));
  }
  return out.join('\n');
}

/** The anchors GitHub makes for a document's headings (lower case, punctuation dropped, spaces → "-", repeats numbered). */
export function headingSlugs(text: string): Set<string> {
  const slugs = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseOf(text, { keepInlineCode: true }).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = githubSlug(m[1]);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    slugs.add(n === 0 ? base : `${base}-${n}`);
  }
  // Explicit anchors: <a id="…"> / <a name="…">.
  for (const m of text.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) slugs.add(m[1]);
  return slugs;
}

export function githubSlug(heading: string): string {
  return heading
    .replace(/<[^>]+>/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*_~]/g, (c) => (c === '_' ? '_' : ''))
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-');
}

export interface Link {
  file: string;
  line: number;
  target: string;
}

/** Inline links and images `[text](target)` and reference definitions `[x]: target` in the prose. */
export function linksOf(file: string, text = readFileSync(file, 'utf8')): Link[] {
  const links: Link[] = [];
  proseOf(text)
    .split('\n')
    .forEach((line, i) => {
      for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) links.push({ file, line: i + 1, target: m[1] });
      const def = /^\s*\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)/.exec(line);
      if (def) links.push({ file, line: i + 1, target: def[1] });
    });
  return links;
}

export const rel = (file: string): string => relative(repoRoot, file);
