import { encode } from '../codec/codec.js';
import { signalPayload, signalTopic, type SignalDefinition } from '../definitions/signals.js';
import {
  CallbackRefusedError,
  IllegalTransitionError,
  InvalidArgumentError,
  InvalidOptionsError,
  RunNotFoundError,
  SignalNotTakenError,
} from '../errors/index.js';
import { messageByKey, sendMessage } from '../store/messages.js';
import { FINISHED_STATUSES } from '../store/rows.js';
import { getResult, runWorkflow } from '../store/runs.js';
import { callbackTopic } from '../workflow/signals.js';
import { verifyCallback } from '../codec/callback-token.js';
import type { EngineContext } from './engine-context.js';
import { checkKey } from '../config/limits.js';

/** The result of a callback POST that was accepted. */
export interface CallbackDelivery {
  runId: string;
  /** The same body had been delivered already (a retry of the sender): nothing changed. */
  duplicate: boolean;
}

/** The signal named by a definition or a name, among the app's signals (the engine option `signals`). */
export function signalOf(e: EngineContext, signal: SignalDefinition | string): SignalDefinition {
  const name = typeof signal === 'string' ? signal : signal?.name;
  const def = typeof name === 'string' ? e.options.signals.get(name) : undefined;
  if (def) return def;
  if (typeof signal === 'object' && signal && typeof signal.name === 'string') return signal;
  throw new InvalidArgumentError(
    `No signal named ${JSON.stringify(name)}: declare it with defineSignal() and list it in the option signals.`,
    'signal',
  );
}

/**
 * Sends a signal to a run waiting for it (Durable.waitForSignal): the body checked against the
 * signal's payload, then delivered as a message on the signal's topic. A run that has ended:
 * IllegalTransitionError (nothing is stored); unknown run: RunNotFoundError.
 */
export async function sendSignal(
  e: EngineContext,
  runId: string,
  signal: SignalDefinition | string,
  body: unknown,
  opts: { idempotencyKey?: string } = {},
): Promise<void> {
  const def = signalOf(e, signal);
  const payload = signalPayload(def, body);
  const run = await runWorkflow(e.store, runId);
  if (!run) throw new RunNotFoundError(runId);
  if (FINISHED_STATUSES.has(run.status))
    throw new IllegalTransitionError(runId, run.status, `send signal "${def.name}" to`, ['PENDING', 'RUNNING', 'WAITING']);
  // A workflow takes the signals it declares (@Workflow({ signals })), no other (unknown here: not checked).
  const takes = e.registry.has(run.workflowName) ? (e.registry.get(run.workflowName).options.signals ?? []) : null;
  if (takes && !takes.some((s) => s.name === def.name))
    throw new SignalNotTakenError(
      runId,
      run.workflowName,
      def.name,
      takes.map((s) => s.name),
    );
  const key = opts.idempotencyKey ?? null;
  if (key !== null) checkKey('sendSignal()', 'idempotencyKey', key);
  const encoded = encode(payload, { where: `signal "${def.name}" to run ${runId}`, maxBytes: e.options.maxPayloadBytes });
  const r = await sendMessage(e.store, {
    runId,
    topic: signalTopic(def.name),
    payload: encoded,
    idempotencyKey: key,
    traceparent: e.telemetry.tracing.activeTraceparent(),
    activeOnly: true, // a run that ended since the check above gets nothing
  });
  if (!r.found) {
    const now = await runWorkflow(e.store, runId);
    if (!now) throw new RunNotFoundError(runId);
    throw new IllegalTransitionError(runId, now.status, `send signal "${def.name}" to`, ['PENDING', 'RUNNING', 'WAITING']);
  }
}

/**
 * A POST to a callback URL (Durable.callback): the token verified (CallbackRefusedError 'invalid'
 * otherwise), not expired, its run not ended, the body checked against the callback's signal, then
 * delivered once — the same body again is a retry (accepted, nothing changes), another body is
 * refused ('used'). Nothing is written when it is refused.
 */
export async function completeCallback(
  e: EngineContext,
  token: unknown,
  body: unknown,
  check?: (signal: SignalDefinition, body: unknown) => Promise<unknown>,
): Promise<CallbackDelivery> {
  const settings = e.options.callbacks;
  if (!settings) throw new InvalidOptionsError('completeCallback() needs the engine option callbacks: { secret } that signed the URL.');
  const claim = verifyCallback(settings.secret, token);
  if (Date.now() > claim.expiresAt)
    throw new CallbackRefusedError(
      'expired',
      `This callback URL expired at ${new Date(claim.expiresAt).toISOString()}; the run no longer waits for it.`,
    );
  const def = claim.signal ? e.options.signals.get(claim.signal) : undefined;
  if (claim.signal && !def)
    throw new InvalidOptionsError(
      `The callback expects signal "${claim.signal}", which is not in this app's option signals: list it there.`,
    );
  const payload = def ? signalPayload(def, check ? await check(def, body) : body) : body;
  const encoded = encode({ body: payload }, { where: `the body of a callback to run ${claim.runId}`, maxBytes: e.options.maxPayloadBytes });
  const idempotencyKey = `callback:${claim.id}`;
  const r = await sendMessage(e.store, {
    runId: claim.runId,
    topic: callbackTopic(claim.id),
    payload: encoded,
    idempotencyKey,
    traceparent: e.telemetry.tracing.activeTraceparent(),
    activeOnly: true,
  });
  // The insert itself refuses a run that has ended (or is gone): read which only then.
  if (!r.found) {
    const run = await getResult(e.store, claim.runId);
    throw new CallbackRefusedError(
      'ended',
      `The run this callback resumes has ended${run ? ` (${run.status})` : ''}; nothing was delivered.`,
    );
  }
  if (r.sent) return { runId: claim.runId, duplicate: false };
  const first = await messageByKey(e.store, claim.runId, idempotencyKey);
  if (first && stable(first.payload) === stable(JSON.parse(encoded))) return { runId: claim.runId, duplicate: true };
  throw new CallbackRefusedError('used', 'This callback URL was used already, with another body; nothing changed.');
}

/** JSON with object keys sorted: equal for equal values whatever the key order (jsonb reorders keys). */
function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stable((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(v);
}
