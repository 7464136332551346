import { existsSync } from 'node:fs';

/** Headless Chromium for the dashboard's browser tests: the Debian package's (`apt-get install -y chromium`), or DURABLE_CHROMIUM. */
export const CHROMIUM = process.env.DURABLE_CHROMIUM || '/usr/bin/chromium';

/**
 * Can the browser tests run? True when Chromium is installed. Without it a developer's run skips
 * them (saying so); with DURABLE_REQUIRE_BROWSER=1 (CI sets it) it throws instead, so a run
 * without the browser cannot pass.
 */
export function chromiumAvailable(what: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  const message = `${what}: ${CHROMIUM} is absent (install it with: apt-get install -y chromium)`;
  if (process.env.DURABLE_REQUIRE_BROWSER === '1')
    throw new Error(`${message}. DURABLE_REQUIRE_BROWSER=1 requires the browser tests to run.`);
  console.log(`SKIPPED ${message}`);
  return false;
}

/**
 * `describe` for a suite that needs Chromium: skipped without it, unless DURABLE_REQUIRE_BROWSER=1,
 * where the suite is one failing test naming what is missing.
 */
export function describeBrowser(name: string, fn: () => void): void {
  let available: boolean;
  try {
    available = chromiumAvailable(name);
  } catch (err) {
    describe(name, () => {
      it('needs Chromium', () => {
        throw err;
      });
    });
    return;
  }
  (available ? describe : describe.skip)(name, fn);
}
