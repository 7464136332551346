import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pw from 'playwright-core';
import { CHROMIUM } from '../../support/chromium.js';

export const ARTIFACTS = join(process.cwd(), 'test-artifacts');

export async function launchChromium(): Promise<pw.Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return pw.chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export type Rect = { x: number; y: number; width: number; height: number };

/**
 * The rectangles of the first elements matching `selectors`, read in one turn of the page's event
 * loop: the run pane re-renders on every live update, so two separate reads (locator.boundingBox)
 * can find an element and then measure it detached (null). Fails when one is missing.
 */
export async function rects(page: pw.Page, selectors: string[]): Promise<Rect[]> {
  const found = await page.evaluate((sels) => {
    const doc = (globalThis as unknown as { document: { querySelector(s: string): { getBoundingClientRect(): Rect } | null } }).document;
    return sels.map((s) => {
      const r = doc.querySelector(s)?.getBoundingClientRect();
      return r ? { x: r.x, y: r.y, width: r.width, height: r.height } : null;
    });
  }, selectors);
  found.forEach((r, i) => {
    if (r === null) throw new Error(`no element matches ${selectors[i]}`);
  });
  return found as Rect[];
}
