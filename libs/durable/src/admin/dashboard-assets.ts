import { readFileSync } from 'node:fs';

const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/**
 * The dashboard's files, shipped next to this module (src/admin/dashboard → dist/admin/dashboard). Only these
 * names are served. dashboard.js is the page's ES module entry; it imports the other modules by relative URL
 * (no build step, no bundle, no global).
 */
export const DASHBOARD_FILES = {
  'index.html': 'text/html; charset=utf-8',
  'dashboard.css': CSS,
  'detail.css': CSS,
  'list.css': CSS,
  'panels.css': CSS,
  'dashboard.js': JS,
  'actions.js': JS,
  'api.js': JS,
  'backfills.js': JS,
  'bulk.js': JS,
  'charts.js': JS,
  'constants.js': JS,
  'dom.js': JS,
  'flow.js': JS,
  'flow-runs.js': JS,
  'hooks.js': JS,
  'list.js': JS,
  'live.js': JS,
  'nav.js': JS,
  'panels.js': JS,
  'run-export.js': JS,
  'run-detail.js': JS,
  'signals.js': JS,
  'state.js': JS,
  'streams.js': JS,
  'stats.js': JS,
  'tables.js': JS,
  'timeline.js': JS,
  'versions.js': JS,
  'waiting.js': JS,
  'schedule-editor.js': JS,
  'schedules.js': JS,
} as const;

export type DashboardFile = keyof typeof DASHBOARD_FILES;

/** Whether `name` is one of the dashboard's files (an asset URL's last segment, from the request). */
export function isDashboardFile(name: string): name is DashboardFile {
  return name !== 'index.html' && Object.prototype.hasOwnProperty.call(DASHBOARD_FILES, name);
}

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
