import { checkKey } from '../config/limits.js';
import { encode } from '../codec/codec.js';
import { setEvent as storeEvent } from '../store/events.js';
import { durableOperation, fencedWrite } from './durable-operation.js';

/** Durable.setEvent — see durable-api.ts. */
export function setEvent(key: string, value: unknown): Promise<void> {
  try {
    checkKey('Durable.setEvent()', 'key', key);
  } catch (err) {
    return Promise.reject(err);
  }
  return durableOperation('Durable.setEvent()', `durable.setEvent:${key}`, async ({ ctx, seq, name, recorded }) => {
    if (recorded) return;
    const encoded = encode(value, { where: `event "${key}" of run ${ctx.runId}`, maxBytes: ctx.services.options.maxPayloadBytes });
    await fencedWrite(ctx, async () => ({
      held: await storeEvent(ctx.services.store, { runId: ctx.runId, epoch: ctx.epoch, seq, name, key, value: encoded }),
    }));
  });
}
