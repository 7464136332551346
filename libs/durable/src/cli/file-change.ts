import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { shown } from './prisma-project.js';

/** One file init creates or rewrites: its content before (null: new) and after, and why. */
export interface FileChange {
  path: string;
  before: string | null;
  after: string;
  why: string;
  /** false: the change is a whole-file replacement, not worth showing line by line. */
  showLines?: false;
}

/** Writes each change through a temporary file and a rename, so a file is never half written. */
export function applyChanges(changes: FileChange[]): void {
  for (const c of changes) {
    mkdirSync(dirname(c.path), { recursive: true });
    const tmp = `${c.path}.nestjs-durable-${process.pid}.tmp`;
    writeFileSync(tmp, c.after);
    renameSync(tmp, c.path);
  }
}

/** "create prisma/durable.prisma: why", or "edit …: why" followed by the changed lines (- before, + after). */
export function describeChange(root: string, c: FileChange): string {
  const head = `${c.before === null ? 'create' : 'edit'} ${shown(root, c.path)}: ${c.why}`;
  if (c.before === null || c.showLines === false) return head;
  return [head, ...changedLines(c.before, c.after).map((l) => `    ${l}`)].join('\n');
}

/** The lines between the common head and tail of two texts: removed with "- ", added with "+ ". */
export function changedLines(before: string, after: string, max = 12): string[] {
  const a = before.split('\n');
  const b = after.split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const lines = [...a.slice(head, a.length - tail).map((l) => `- ${l}`), ...b.slice(head, b.length - tail).map((l) => `+ ${l}`)];
  return lines.length > max ? [...lines.slice(0, max), `… ${lines.length - max} more lines`] : lines;
}
