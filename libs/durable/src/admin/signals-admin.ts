import { isPayloadClass } from '../definitions/signals.js';
import { signalWaits } from '../store/signal-waits.js';
import { iso, type AdminContext } from './admin-context.js';

/** How many of the newest WAITING runs are looked at for signal waits. */
const SCAN = 1000;

/**
 * The app's signals (defineSignal, module option `signals`) and the runs waiting for one, for the
 * dashboard's Signals panel: it answers a wait by POSTing to the signal's own endpoint, so the
 * signal's guards judge the operator as they judge any sender.
 */
export class SignalsAdmin {
  constructor(
    private readonly c: AdminContext,
    /** The path the module mounts the signals at (`signalPath`), without the app's global prefix. */
    private readonly signalPath: () => string,
    /** The admin API's own path (the dashboard finds the app's root with it). */
    private readonly adminPath: () => string,
  ) {}

  async list() {
    const declared = [...this.c.engine.options.signals.values()];
    const waits = await signalWaits(this.c.store, SCAN);
    return {
      signals: declared.map((s) => ({
        name: s.name,
        description: s.description ?? null,
        path: `${this.signalPath()}/${s.name}/:runId`,
        payload: !s.payload ? 'any JSON' : isPayloadClass(s.payload) ? `${s.payload.name} (validated)` : 'checked by a function',
        guarded: s.guards.length > 0,
        workflows: this.c.engine.registry
          .names()
          .filter((w) => this.c.engine.registry.get(w).options.signals?.some((x) => x.name === s.name)),
      })),
      waiting: waits.map((w) => ({ ...w, since: iso(w.since), declared: this.c.engine.options.signals.has(w.signal) })),
      scanned: SCAN,
      adminPath: this.adminPath(),
    };
  }
}
