import { randomBytes } from 'node:crypto';
import { checkMs } from '../config/limits.js';
import type { StepDefinition } from '../definitions/definitions.js';
import { signalTopic, type SignalDefinition } from '../definitions/signals.js';
import { isSignalDefinition } from '../config/signal-types.js';
import { CallbackTimeoutError, InvalidArgumentError, InvalidOptionsError, NotInWorkflowError } from '../errors/index.js';
import { signCallback } from '../codec/callback-token.js';
import { currentScope } from './run-context.js';
import { invokeStep } from './step-runner.js';
import { durableRecv } from './waits.js';

/** The message topic the body of callback `id` travels on. */
export const callbackTopic = (id: string): string => `durable.callback:${id}`;

/** A callback URL made by Durable.callback(): hand `url` to a third party; `wait()` resumes when it is POSTed. */
export interface DurableCallback<T = unknown> {
  /** The URL to POST to (absolute with the option callbacks.baseUrl, else a path). A secret: give it to the sender only. */
  readonly url: string;
  /** The token in the URL, for apps that route callbacks themselves (WorkflowClient.completeCallback). */
  readonly token: string;
  /** When the URL stops working: the callback's timeout from its creation. */
  readonly expiresAt: Date;
  /** The POSTed body (checked against the signal's payload, if given); CallbackTimeoutError when nobody called in time. */
  wait(): Promise<T>;
}

const CALLBACK = (): StepDefinition => ({ name: 'durable.callback', options: { retries: 0 } });

/** Durable.waitForSignal — see durable-api.ts. */
export function waitForSignal<T>(signal: SignalDefinition<T>, opts: { timeoutMs?: number } = {}): Promise<T | null> {
  if (!isSignalDefinition(signal))
    return Promise.reject(new InvalidArgumentError('Durable.waitForSignal(): pass a signal made by defineSignal().', 'signal'));
  return durableRecv<T>(signalTopic(signal.name), opts);
}

/** Durable.callback — see durable-api.ts. */
export async function durableCallback<T>(opts: { timeoutMs: number; signal?: SignalDefinition<T> }): Promise<DurableCallback<T>> {
  const scope = currentScope();
  if (!scope || scope.step) throw new NotInWorkflowError('Durable.callback()', 'workflow code (not inside a step)');
  const timeoutMs = checkMs('Durable.callback()', 'timeoutMs', opts?.timeoutMs);
  if (opts.signal !== undefined && !isSignalDefinition(opts.signal))
    throw new InvalidArgumentError('Durable.callback(): signal must be made by defineSignal().', 'signal');
  const settings = scope.run.services.options.callbacks;
  if (!settings)
    throw new InvalidOptionsError(
      'Durable.callback() needs the engine option callbacks: { secret } (at least 32 bytes, the same on every instance), to sign its URLs.',
    );
  const clock = scope.run.services.clock;
  // The id and the expiry are recorded: every replay makes the same token, so a URL handed out stays valid.
  const made = (await invokeStep(CALLBACK(), () => ({ id: randomBytes(16).toString('hex'), expiresAt: clock.now() + timeoutMs }))) as {
    id: string;
    expiresAt: number;
  };
  const runId = scope.run.runId;
  const token = signCallback(settings.secret, { runId, id: made.id, expiresAt: made.expiresAt, signal: opts.signal?.name ?? '' });
  const url = `${settings.baseUrl}/${settings.path}/${token}`;
  return {
    url,
    token,
    expiresAt: new Date(made.expiresAt),
    async wait(): Promise<T> {
      const left = Math.max(0, made.expiresAt - clock.now());
      const got = await durableRecv<{ body: T }>(callbackTopic(made.id), { timeoutMs: left });
      if (!got) throw new CallbackTimeoutError(timeoutMs);
      return got.body;
    },
  };
}
