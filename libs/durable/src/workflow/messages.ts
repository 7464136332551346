import { RunNotFoundError } from '../errors/index.js';
import { checkIdentifierCharacters } from '../config/identifiers.js';
import { describeThrown } from '../errors/describe-thrown.js';
import { checkKey, MAX_ID_LENGTH } from '../config/limits.js';
import { encode } from '../codec/codec.js';
import { sendFromRun } from '../store/messages.js';
import { durableOperation, fencedWrite } from './durable-operation.js';

/** Durable.send — see durable-api.ts. */
export function durableSend(runId: string, topic: string, payload: unknown): Promise<void> {
  try {
    if (typeof runId !== 'string' || !runId || runId.length > MAX_ID_LENGTH) throw new RunNotFoundError(describeThrown(runId));
    checkIdentifierCharacters('Durable.send()', 'runId', runId);
    checkKey('Durable.send()', 'topic', topic);
  } catch (err) {
    return Promise.reject(err);
  }
  return durableOperation('Durable.send()', `durable.send:${topic}`, async ({ ctx, seq, name, recorded }) => {
    if (recorded) return;
    const encoded = encode(payload, { where: `message "${topic}" to run ${runId}`, maxBytes: ctx.services.options.maxPayloadBytes });
    const r = await fencedWrite(ctx, () =>
      sendFromRun(ctx.services.store, {
        runId: ctx.runId,
        epoch: ctx.epoch,
        seq,
        name,
        target: runId,
        topic,
        payload: encoded,
        traceparent: ctx.services.telemetry.tracing.traceparentOf(ctx.span),
      }),
    );
    if (!r.found) throw new RunNotFoundError(runId);
  });
}
