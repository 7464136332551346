import { InitError } from './init-error.js';
import { blankComments, indentAt, stringEnd } from './text-scan.js';

/**
 * The `schema` property of a prisma.config.ts, read from its text (init never executes the
 * config): a string literal with its position, an expression init cannot evaluate, or absent.
 */
export type ConfigSchema =
  { kind: 'literal'; value: string; start: number; end: number } | { kind: 'expression'; text: string } | { kind: 'absent' };

const QUOTES = `'"\``;

export function readConfigSchema(text: string, file: string): ConfigSchema {
  const code = blankComments(text, QUOTES, true);
  const keys = [...code.matchAll(/(?<![\w$.])(['"]?)schema\1\s*:/g)];
  if (keys.length === 0) return { kind: 'absent' };
  if (keys.length > 1) {
    throw new InitError(
      'CONFIG_NOT_EDITABLE',
      `${file} has ${keys.length} \`schema:\` properties; init cannot tell which one Prisma uses. ` +
        `Run init with --schema <your schema file or folder>.`,
    );
  }
  let start = keys[0].index! + keys[0][0].length;
  while (/\s/.test(code[start] ?? '')) start++;
  const end = QUOTES.includes(code[start]) ? stringEnd(code, start) : start;
  const after = code.slice(end).trimStart()[0];
  const literal = text.slice(start + 1, end - 1);
  if (end > start && (after === ',' || after === '}' || after === undefined) && !literal.includes('${')) {
    return { kind: 'literal', value: literal, start, end };
  }
  return { kind: 'expression', text: /^[^,\n}]*/.exec(text.slice(start))![0].trim() };
}

/**
 * The config text with `schema` set to `value`: the literal replaced (same quotes), or a
 * `schema:` property inserted at the top of the `defineConfig({ … })` / `export default { … }`
 * object. Throws InitError when the text has neither shape or computes `schema`.
 */
export function withConfigSchema(text: string, file: string, value: string): string {
  const current = readConfigSchema(text, file);
  if (current.kind === 'literal') {
    const quote = text[current.start];
    return text.slice(0, current.start) + quote + value + quote + text.slice(current.end);
  }
  const byHand = `set \`schema: '${value}'\` in ${file} by hand and run init again`;
  if (current.kind === 'expression') {
    throw new InitError('CONFIG_NOT_EDITABLE', `${file} computes \`schema\` (${current.text}); init does not run it. Please ${byHand}.`);
  }
  const code = blankComments(text, QUOTES, true);
  const open = /defineConfig\s*\(\s*\{|export\s+default\s*\{/.exec(code);
  if (!open) {
    throw new InitError(
      'CONFIG_NOT_EDITABLE',
      `${file} has neither \`defineConfig({ … })\` nor \`export default { … }\`. Please ${byHand}.`,
    );
  }
  const at = open.index + open[0].length;
  const quote = /['"]/.exec(code)?.[0] ?? "'";
  const property = `schema: ${quote}${value}${quote},`;
  const rest = text.slice(at);
  const nextLine = /^[ \t]*\r?\n(?:[ \t]*\r?\n)*([ \t]*)\S/.exec(rest);
  if (nextLine) return `${text.slice(0, at)}\n${nextLine[1] || `${indentAt(text, at)}  `}${property}${rest}`;
  return `${text.slice(0, at)} ${property}${rest}`;
}
