/** The `context` engine option: the app's context (tenant, user…) captured at start() and restored around every execution of the run. */

/**
 * What a run keeps of the app's context, and how it is given back. A SaaS app keeps its tenant and
 * user in request context (AsyncLocalStorage, nestjs-cls); a run started in a request keeps what
 * `capture` returns, and every execution of it — on any instance, after any crash — runs its
 * workflow and steps inside `restore`, reads it with `Durable.context()`, and applies `settings`
 * (PostgreSQL) in its transactional steps, so row-level security sees the run's tenant.
 */
export interface DurableContextOptions<C = unknown> {
  /**
   * Called by start() and startMany() in the caller's async context (e.g. inside the request): the
   * context to keep with the run, any value the codec stores (JSON, Date, Map…; at most 16 KiB once
   * encoded). undefined or null: none. The start option `context` is used instead when given.
   */
  capture?: () => C | null | undefined;
  /**
   * Runs each execution of a run with a context (its workflow body, with every step and
   * compensation inside it) in the app's own context, e.g.
   * `(ctx, run) => cls.run(() => { cls.set('tenantId', ctx.tenantId); return run(); })`.
   * It must call `run` once and return what it returns.
   */
  restore?: (context: C, run: () => Promise<unknown>) => Promise<unknown>;
  /**
   * Refuse a start without a context: start() and startMany() throw InvalidArgumentError when
   * neither `capture` nor the start option `context` gives one. Child runs inherit their parent's
   * context; runs fired by schedules have none (their workflow reads `Durable.context()` as undefined).
   */
  required?: boolean;
  /**
   * PostgreSQL only: settings each transactional step (and `Durable.tx()`) applies to its transaction
   * with `set_config(name, value, true)` (SET LOCAL) before its code runs, e.g.
   * `(ctx) => ({ 'app.tenant_id': ctx.tenantId })`, so the app's row-level security policies apply
   * inside workflows. Not called for runs without a context.
   */
  settings?: (context: C) => Record<string, string>;
}

const KEYS = ['capture', 'restore', 'required', 'settings'] as const;

/** Problems of the `context` option (empty when it is absent or fine). */
export function contextOptionProblems(o: unknown): string[] {
  if (o === undefined || o === null) return [];
  if (typeof o !== 'object' || Array.isArray(o)) return [`context must be an object with some of: ${KEYS.join(', ')}`];
  const problems = Object.keys(o)
    .filter((k) => !(KEYS as readonly string[]).includes(k))
    .map((k) => `context.${k} is not an option (${KEYS.join(', ')})`);
  const c = o as Record<string, unknown>;
  for (const fn of ['capture', 'restore', 'settings'] as const) {
    if (c[fn] !== undefined && typeof c[fn] !== 'function') problems.push(`context.${fn} must be a function (got ${typeof c[fn]})`);
  }
  if (c.required !== undefined && typeof c.required !== 'boolean') problems.push('context.required must be true or false');
  return problems;
}
