import { blankComments, stringEnd } from './text-scan.js';

/** The generators whose client the durable models need `partialIndexes` in. */
export const CLIENT_PROVIDERS = ['prisma-client', 'prisma-client-js'];
export const PARTIAL_INDEXES = 'partialIndexes';

/** A `generator name { … }` block of a .prisma file: offsets of `{` and `}`, its provider and preview features. */
export interface GeneratorBlock {
  name: string;
  open: number;
  close: number;
  provider: string | null;
  previewFeatures: string[] | null;
}

/** Every top-level block keyword and name of a .prisma file (`model Foo`, `generator client`, …). */
export function topLevelBlocks(text: string): { keyword: string; name: string; open: number; close: number }[] {
  const code = blankComments(text, '"', false);
  const found = [];
  const head = /^[ \t]*(\w+)[ \t]+(\w+)[ \t]*\{/gm;
  for (let m = head.exec(code); m; m = head.exec(code)) {
    const open = m.index + m[0].length - 1;
    const close = closingBrace(code, open);
    found.push({ keyword: m[1], name: m[2], open, close });
    head.lastIndex = close + 1;
  }
  return found;
}

/** The provider of the file's datasource block ("postgresql", "mysql", …), or null when it has none. */
export function datasourceProvider(text: string): string | null {
  const code = blankComments(text, '"', false);
  const block = topLevelBlocks(text).find((b) => b.keyword === 'datasource');
  if (!block) return null;
  return /^[ \t]*provider[ \t]*=[ \t]*"([^"]*)"/m.exec(code.slice(block.open + 1, block.close))?.[1] ?? null;
}

export function findGenerators(text: string): GeneratorBlock[] {
  const code = blankComments(text, '"', false);
  return topLevelBlocks(text)
    .filter((b) => b.keyword === 'generator')
    .map((b) => {
      const body = code.slice(b.open + 1, b.close);
      const provider = /^[ \t]*provider[ \t]*=[ \t]*"([^"]*)"/m.exec(body)?.[1] ?? null;
      const features = /^[ \t]*previewFeatures[ \t]*=[ \t]*\[([^\]]*)\]/m.exec(body);
      const previewFeatures = features ? [...features[1].matchAll(/"([^"]*)"/g)].map((f) => f[1]) : null;
      return { name: b.name, open: b.open, close: b.close, provider, previewFeatures };
    });
}

/**
 * The text with `feature` appended to the generator's previewFeatures (a one-line list: Prisma
 * rejects a list that spans lines in a generator), or a `previewFeatures = ["feature"]` line added
 * under `provider`. Unchanged when the feature is already on.
 */
export function withPreviewFeature(text: string, generator: GeneratorBlock, feature: string): string {
  if (generator.previewFeatures?.includes(feature)) return text;
  const code = blankComments(text, '"', false);
  const body = code.slice(generator.open + 1, generator.close);
  const list = /^[ \t]*previewFeatures[ \t]*=[ \t]*\[/m.exec(body);
  const item = `"${feature}"`;
  if (list) {
    const open = generator.open + 1 + list.index + list[0].length;
    const close = code.indexOf(']', open);
    const lastQuote = code.slice(open, close).lastIndexOf('"');
    if (lastQuote === -1) return text.slice(0, open) + item + text.slice(close);
    const at = open + lastQuote + 1;
    return `${text.slice(0, at)}, ${item}${text.slice(at)}`;
  }
  // No previewFeatures yet: a line under `provider`, its `=` aligned with provider's when there is room.
  const provider = /^([ \t]*)provider([ \t]*)=.*$/m.exec(body);
  const anchor = provider ? generator.open + 1 + provider.index + provider[0].length : generator.open + 1;
  const indent = provider?.[1] ?? '  ';
  const width = provider ? 'provider'.length + provider[2].length : 0;
  const key = 'previewFeatures'.padEnd(Math.max(width, 'previewFeatures'.length + 1));
  return `${text.slice(0, anchor)}\n${indent}${key}= [${item}]${text.slice(anchor)}`;
}

function closingBrace(code: string, open: number): number {
  for (let i = open + 1; i < code.length; i++) {
    if (code[i] === '"') i = stringEnd(code, i) - 1;
    else if (code[i] === '}') return i;
  }
  return code.length;
}
