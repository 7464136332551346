import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pw from 'playwright-core';

/** Headless Chromium from the Debian package (DESIGN.md §7), for the dashboard's browser tests. */
export const CHROMIUM = '/usr/bin/chromium';
export const ARTIFACTS = join(process.cwd(), 'test-artifacts');
export const haveChromium = existsSync(CHROMIUM);

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
