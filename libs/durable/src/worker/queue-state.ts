import type { ResolvedEngineOptions } from '../config/options.js';
import { OutageLog } from '../retry/outage-log.js';

/** A queue a worker serves: its slots, and where its claim loop stands. */
export interface QueueState {
  name: string;
  concurrency: number;
  /** Slots in use (including runs reserved for an in-process start). */
  busy: number;
  /** Runs whose end is being written: they gave their slot back (RunSlot). */
  ending: number;
  claiming: boolean;
  /** The claim in flight (stop() waits for it: runs it takes while stopping are handed back on the pool). */
  claimed: Promise<void>;
  /** Work is probably waiting: claim again as soon as a slot frees up. */
  more: boolean;
  /** A wake-up arrived while a claim was in flight: claim again after it. */
  wokenDuringClaim: boolean;
  /** A claim is due at the next turn of the event loop (claimSoon). */
  claimQueued: boolean;
  /** Runs the last claim found, Infinity before the first (it sizes the next claim: see claimSize). */
  lastClaimed: number;
  pollTimer?: NodeJS.Timeout;
  outage: OutageLog;
}

/** A queue's state before its first claim. */
export function newQueueState(name: string, o: ResolvedEngineOptions): QueueState {
  return {
    name,
    concurrency: o.queues[name]?.concurrency ?? o.concurrency,
    busy: 0,
    ending: 0,
    claiming: false,
    claimed: Promise.resolve(),
    more: true,
    wokenDuringClaim: false,
    claimQueued: false,
    lastClaimed: Infinity,
    outage: new OutageLog(`claiming from queue "${name}"`, o.logger),
  };
}

/** The fewest runs a claim asks for when slots are free (see claimSize). */
const MIN_CLAIM = 4;

/**
 * How many runs a claim asks for: every free slot at first (the queue may be deep: lastClaimed is
 * Infinity), then twice what the last claim found, at least MIN_CLAIM, so a queue that keeps
 * claims full reaches every free slot in a few claims. A claim holds the slots it asks for until it
 * returns, and a start in this process that finds no free slot cannot take the in-process path; so
 * a claim that found a few runs must not make the next one hold them all (starts that found no slot
 * went to the queue, the next claim found them, and so on).
 */
export function claimSize(free: number, lastClaimed: number): number {
  return Math.min(free, Math.max(MIN_CLAIM, 2 * lastClaimed));
}
