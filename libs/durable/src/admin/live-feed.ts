import { LIVE_CHANGED_LIMIT, liveTick } from '../store/live.js';
import type { Store } from '../store/store.js';

/** What a subscriber of the live feed receives. */
export type LiveEvent =
  | { type: 'hello'; data: { intervalMs: number } }
  | { type: 'changes'; data: { ids: string[]; many: boolean; at: string } }
  | { type: 'run'; data: { id: string; version: string } }
  | { type: 'stats'; data: unknown }
  | { type: 'ping'; data: { at: string } };

export interface LiveSubscription {
  /** A run open in a detail view: its changes (steps, progress, status) are sent as `run` events. */
  run: string | null;
  /** Send the stats (at most every statsEveryMs, when something changed). */
  stats: boolean;
}

interface Subscriber extends LiveSubscription {
  send: (e: LiveEvent) => void;
}

/**
 * How often the feed looks for changes, sends a ping, and at most refreshes the stats; how far back
 * its first look reaches (slackMs), and how far back it ever looks for a transaction that commits late.
 */
export const LIVE_DEFAULTS = { intervalMs: 1000, pingMs: 10_000, statsEveryMs: 5000, slackMs: 1000, maxLookBackMs: 60_000 };

/**
 * One feed per admin module, shared by every live connection: while anyone listens it runs ONE
 * statement per interval (store/live.ts: runs updated since the last tick, and the versions of the
 * runs open somewhere), and the stats at most every few seconds, whatever the number of
 * subscribers. Each subscriber gets what concerns it. The timer stops with the last subscriber.
 *
 * No change is missed, even one committed late (a run written in a transaction that began long
 * before it committed carries the old updated_at of its start): each look reaches back to the
 * start of the oldest transaction that was open two looks ago (a transaction still open at the
 * previous look was either open then, or began after), and keeps only rows written by
 * transactions the previous look could not see yet (store/live.ts). A row version already named
 * is not named again. Only a transaction open longer than maxLookBackMs (60 s) can be missed; the
 * dashboard also reloads what it shows now and then.
 */
export class LiveFeed {
  private readonly subs = new Set<Subscriber>();
  private timer: NodeJS.Timeout | null = null;
  /** What the last two looks found: their snapshot xmin, and the start of the oldest open transaction. */
  private looks: Array<{ now: Date; horizon: string; oldest: Date }> = [];
  /** Row versions named recently (run id → transaction id), so that a second look does not name them again. */
  private named = new Map<string, string>();
  private versions = new Map<string, string>();
  private lastStats = 0;
  private lastPing = 0;
  private dirty = true;
  private ticking = false;

  constructor(
    private readonly store: () => Store,
    private readonly stats: () => Promise<unknown>,
    private readonly o = LIVE_DEFAULTS,
  ) {}

  /** Starts sending `send` the events of `s`; returns the function that stops it. */
  subscribe(s: LiveSubscription, send: (e: LiveEvent) => void): () => void {
    const sub: Subscriber = { ...s, send };
    this.subs.add(sub);
    send({ type: 'hello', data: { intervalMs: this.o.intervalMs } });
    if (s.stats) this.dirty = true;
    if (!this.timer) {
      this.timer = setInterval(() => void this.tick(), this.o.intervalMs);
      this.timer.unref?.();
    }
    return () => {
      this.subs.delete(sub);
      if (!this.subs.size && this.timer) {
        clearInterval(this.timer);
        this.timer = null;
        this.looks = [];
        this.named.clear();
        this.versions.clear();
      }
    };
  }

  get subscribers(): number {
    return this.subs.size;
  }

  /** One round: the shared statement, then each subscriber's share of it. Never overlaps itself. */
  async tick(): Promise<void> {
    if (this.ticking || !this.subs.size) return;
    this.ticking = true;
    try {
      const store = this.store();
      // Distributed mode (Citus): a transaction id means nothing across nodes, so no change events; the
      // statistics go out every statsEveryMs and the dashboard reloads what it shows on its own timer.
      const at = store.layout.partitions === null ? await this.lookForChanges(store) : new Date().toISOString();
      if (store.layout.partitions !== null) this.dirty = true;
      const now = Date.now();
      if (this.dirty && now - this.lastStats >= this.o.statsEveryMs && [...this.subs].some((s) => s.stats)) {
        this.lastStats = now;
        this.dirty = false;
        const stats = await this.stats();
        this.broadcast((s) => (s.stats ? { type: 'stats', data: stats } : null));
      }
      if (now - this.lastPing >= this.o.pingMs) {
        this.lastPing = now;
        this.broadcast(() => ({ type: 'ping', data: { at } }));
      }
    } catch {
      // A failed round (database briefly away) is retried at the next interval; subscribers keep their connection.
    } finally {
      this.ticking = false;
    }
  }

  /** The shared statement: runs changed since the last look, and new versions of the watched runs; returns the database clock. */
  private async lookForChanges(store: Store): Promise<string> {
    const watched = [...new Set([...this.subs].map((s) => s.run).filter((r): r is string => r !== null))];
    const prev = this.looks[this.looks.length - 1];
    const t = await liveTick(store, this.since(), prev?.horizon ?? null, watched);
    this.looks = [...this.looks.slice(-1), { now: t.now, horizon: t.horizon, oldest: t.oldest }];
    const at = t.now.toISOString();
    const fresh = t.changed.filter((c) => this.named.get(c.id) !== c.xid);
    for (const c of t.changed) this.named.set(c.id, c.xid);
    // A version below the horizon is never returned again: forget it.
    for (const [id, xid] of this.named) if (BigInt(xid) < BigInt(t.horizon)) this.named.delete(id);
    if (fresh.length) {
      this.dirty = true;
      const ids = [...new Set(fresh.slice(0, LIVE_CHANGED_LIMIT).map((c) => c.id))];
      this.broadcast(() => ({ type: 'changes', data: { ids, many: t.changed.length > LIVE_CHANGED_LIMIT, at } }));
    }
    for (const w of t.watched) {
      if (this.versions.get(w.id) === w.v) continue;
      this.versions.set(w.id, w.v);
      this.broadcast((s) => (s.run === w.id ? { type: 'run', data: { id: w.id, version: w.v } } : null));
    }
    return at;
  }

  /**
   * How far back this look reaches: the oldest transaction open two looks ago (see the class), or
   * at the first looks the slack before the previous one; never more than maxLookBackMs.
   */
  private since(): Date {
    const [older, last] = this.looks.length === 2 ? this.looks : [undefined, this.looks[0]];
    if (!last) return new Date(Date.now() - this.o.slackMs);
    const from = older ? older.oldest.getTime() : Math.min(last.oldest.getTime(), last.now.getTime() - this.o.slackMs);
    return new Date(Math.max(from, last.now.getTime() - this.o.maxLookBackMs));
  }

  private broadcast(event: (s: Subscriber) => LiveEvent | null): void {
    for (const s of this.subs) {
      const e = event(s);
      if (e) s.send(e);
    }
  }
}
