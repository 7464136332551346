// @ts-check
// nestjs-durable dashboard: the page's constants (statuses, timings, where the admin API is). A leaf: imports nothing.

/** The admin API's URL prefix: this page's path (the page is served at {path}/). */
export const BASE = location.pathname.replace(/\/+$/, '') + '/';
/** Every run status, in the order the chips and counters show them. */
export const STATUSES = ['PENDING', 'RUNNING', 'WAITING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
/** The statuses of a run that has not ended. */
export const ACTIVE = ['PENDING', 'RUNNING', 'WAITING'];
/** Where the bearer token is kept (this tab only). */
export const TOKEN_KEY = 'nestjs-durable.token';
/** Lists, stats and open panels are refreshed this often when no event stream says when. */
export const REFRESH_MS = 5000;
/** An open run that is still going is refreshed this often (live progress, compensation). */
export const RUN_REFRESH_MS = 1500;
