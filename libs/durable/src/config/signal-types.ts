/** The shape of a signal (defineSignal in definitions/signals.ts), here so that the engine options can name it. */

/** A class (a DTO the app's ValidationPipe checks) or a function that returns the payload or throws. */
export type SignalPayload<T> = (abstract new (...args: any[]) => T) | ((body: unknown) => T);

/**
 * A named, typed message a run waits for (Durable.waitForSignal, or the body of a Durable.callback
 * URL): who may send it and what it carries. Declare it once, at module level, and list it in the
 * module option `signals` so that the library mounts its endpoint and the dashboard can answer it.
 */
export interface SignalDefinition<T = unknown> {
  readonly name: string;
  /**
   * What the body must be: a class (its `@Body()` type, so the app's global ValidationPipe checks
   * it) or a function that returns the payload or throws (a zod schema's `parse`, a hand check).
   * Absent: any JSON.
   */
  readonly payload?: SignalPayload<T>;
  /**
   * Nest guards on its endpoint (the app's own: roles, JWT…): a sender they refuse gets their
   * 401/403. The module refuses to mount a signal's endpoint without guards (unless `unsafeNoGuard`).
   */
  readonly guards: readonly (abstract new (...args: any[]) => unknown)[];
  /**
   * Decorators applied to its endpoint's handler, e.g. `[Roles('manager')]` for a guard that reads
   * the handler's metadata (a RolesGuard that lets everyone through when a route names no role).
   */
  readonly decorators: readonly MethodDecorator[];
  /** false: no endpoint (a callback's payload check only, or signals your own code sends). Default true. */
  readonly endpoint: boolean;
  /** true: mount its endpoint without guards, deliberately (anyone who can reach the app may send it). */
  readonly unsafeNoGuard: boolean;
  /** For the OpenAPI document and the dashboard. */
  readonly description?: string;
  /** Only carries the payload type. */
  readonly __payload?: T;
}

/** Whether `x` is a signal (what defineSignal() returns), as the options, @Workflow({ signals }) and the durable API check it. */
export const isSignalDefinition = (x: unknown): x is SignalDefinition =>
  !!x && typeof (x as SignalDefinition).name === 'string' && Array.isArray((x as SignalDefinition).guards);
