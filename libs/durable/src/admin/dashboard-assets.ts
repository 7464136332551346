import { readFileSync } from 'node:fs';

/** The dashboard's files, shipped next to this module (src/admin/dashboard → dist/admin/dashboard). */
export const DASHBOARD_FILES = {
  'index.html': 'text/html; charset=utf-8',
  'dashboard.js': 'text/javascript; charset=utf-8',
  'schedules.js': 'text/javascript; charset=utf-8',
  'run-export.js': 'text/javascript; charset=utf-8',
  'versions.js': 'text/javascript; charset=utf-8',
  'flow.js': 'text/javascript; charset=utf-8',
  'hooks.js': 'text/javascript; charset=utf-8',
  'dashboard.css': 'text/css; charset=utf-8',
} as const;

export type DashboardFile = keyof typeof DASHBOARD_FILES;

const cache = new Map<DashboardFile, string>();

/** The file's text (read once), or null if the package was shipped without it. */
export function dashboardFile(name: DashboardFile): string | null {
  let text = cache.get(name);
  if (text === undefined) {
    try {
      text = readFileSync(new URL(`./dashboard/${name}`, import.meta.url), 'utf8');
    } catch {
      return null;
    }
    cache.set(name, text);
  }
  return text;
}

/** The page loads only its own script and stylesheet and talks only to its own origin. */
export const DASHBOARD_HEADERS: Record<string, string> = {
  'Cache-Control': 'no-cache',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
};
