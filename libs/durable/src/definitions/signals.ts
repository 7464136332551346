import { InvalidArgumentError, InvalidDefinitionError } from '../errors/index.js';
import { checkKey } from '../config/limits.js';
import type { SignalDefinition, SignalPayload } from '../config/signal-types.js';
export type { SignalDefinition, SignalPayload } from '../config/signal-types.js';

/** The message topic a signal travels on (what Durable.recv would name it). */
export const signalTopic = (name: string): string => `durable.signal:${name}`;

/**
 * Declares a signal: `export const RefundApproval = defineSignal<Approval>('refund.approval', {
 * payload: ApprovalDto, guards: [ManagersOnly] })`. Its name is its identity (the endpoint
 * `POST <signals path>/refund.approval/:runId` and the topic it travels on).
 */
export function defineSignal<T = unknown>(
  name: string,
  opts: {
    payload?: SignalPayload<T>;
    guards?: SignalDefinition['guards'];
    decorators?: MethodDecorator[];
    description?: string;
    endpoint?: boolean;
    unsafeNoGuard?: boolean;
  } = {},
): SignalDefinition<T> {
  checkKey('defineSignal()', 'name', name);
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/.test(name))
    throw new InvalidDefinitionError(
      `defineSignal("${name}"): a signal name is part of a URL: 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit.`,
    );
  if (opts.payload !== undefined && typeof opts.payload !== 'function')
    throw new InvalidDefinitionError(`defineSignal("${name}"): payload must be a class or a function (body) => payload.`);
  const guards = opts.guards ?? [];
  if (!Array.isArray(guards) || guards.some((g) => typeof g !== 'function'))
    throw new InvalidDefinitionError(`defineSignal("${name}"): guards must be a list of guard classes.`);
  const decorators = opts.decorators ?? [];
  if (!Array.isArray(decorators) || decorators.some((d) => typeof d !== 'function'))
    throw new InvalidDefinitionError(`defineSignal("${name}"): decorators must be a list of method decorators, e.g. [Roles('manager')].`);
  for (const flag of ['endpoint', 'unsafeNoGuard'] as const)
    if (opts[flag] !== undefined && typeof opts[flag] !== 'boolean')
      throw new InvalidDefinitionError(`defineSignal("${name}"): ${flag} must be true or false.`);
  return Object.freeze({
    name,
    payload: opts.payload,
    guards: Object.freeze([...guards]),
    decorators: Object.freeze([...decorators]),
    description: opts.description,
    endpoint: opts.endpoint ?? true,
    unsafeNoGuard: opts.unsafeNoGuard ?? false,
  });
}

/** Whether the payload is a class (validated by Nest pipes) rather than a function. */
export const isPayloadClass = (p: SignalPayload<unknown> | undefined): p is abstract new (...args: any[]) => unknown =>
  typeof p === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(p));

/**
 * The payload of a body sent to `def`: the function's result, or the body itself (a class payload
 * is checked by the app's pipes before this is called). A function that throws: InvalidArgumentError
 * with its message.
 */
export function signalPayload<T>(def: SignalDefinition<T>, body: unknown): T {
  const p = def.payload;
  if (!p || isPayloadClass(p)) return body as T;
  try {
    return (p as (body: unknown) => T)(body);
  } catch (err) {
    throw new InvalidArgumentError(
      `signal "${def.name}": the body is not a valid payload: ${(err as Error)?.message ?? String(err)}`,
      'body',
    );
  }
}
