/**
 * The text with comments replaced by spaces (same length, so offsets stay valid), leaving string
 * literals alone: searches for keys and blocks then never match inside a comment.
 * `quotes`: the string delimiters of the language; `blockComments`: whether slash-star comments exist.
 */
export function blankComments(text: string, quotes: string, blockComments: boolean): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (quotes.includes(c)) {
      const end = stringEnd(text, i);
      out += text.slice(i, end);
      i = end;
    } else if (c === '/' && text[i + 1] === '/') {
      const end = text.indexOf('\n', i) === -1 ? text.length : text.indexOf('\n', i);
      out += ' '.repeat(end - i);
      i = end;
    } else if (blockComments && c === '/' && text[i + 1] === '*') {
      const close = text.indexOf('*/', i + 2);
      const end = close === -1 ? text.length : close + 2;
      out += text.slice(i, end).replace(/[^\n]/g, ' ');
      i = end;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** The offset just after the string literal that starts at `start` (backslash escapes respected). */
export function stringEnd(text: string, start: number): number {
  const quote = text[start];
  for (let i = start + 1; i < text.length; i++) {
    if (text[i] === '\\') i++;
    else if (text[i] === quote) return i + 1;
  }
  return text.length;
}

/** The leading whitespace of the line that contains `offset`. */
export function indentAt(text: string, offset: number): string {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  return /^[ \t]*/.exec(text.slice(lineStart))![0];
}
