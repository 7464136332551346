import { SCHEDULE_FIRE_CONCURRENCY, SCHEDULE_LOOKAHEAD_MS, SCHEDULE_MAX_PER_ROUND, SCHEDULE_SLOTS_PER_ROUND } from '../config/limits.js';
import type { ResolvedEngineOptions } from '../config/options.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import { CronClock, scheduleRunId } from '../definitions/schedule.js';
import { errorText } from '../errors/error-text.js';
import { OutageLog } from '../retry/outage-log.js';
import { fireSchedules, selectDueSchedules, type DueSchedule, type FirePlan } from '../store/schedule-firing.js';
import type { Store } from '../store/store.js';
import { planSlots } from './schedule-plan.js';

/** Of each schedule planned in a round, the missed slots its plan leaves out (logged once a fire statement applies the plan). */
type LeftOut = Map<string, { from: number; before: number; catchUp: string }>;
/** How long to wait before reading again when some plans were not applied (another instance holds them, or a clock estimate was early). */
const RETRY_MS = 20;

/**
 * Starts the runs of due schedule slots. Safe on every instance at once: a plan applies only to the
 * revision of the row it was computed from, the fire statement locks rows with SKIP LOCKED, and a
 * slot's run id is derived from the schedule and the slot (inserted ON CONFLICT DO NOTHING).
 *
 * Each round reads the schedules due within SCHEDULE_LOOKAHEAD_MS (database clock), computes
 * their slots and next fires in Node (the cron package, memoized), waits until each slot's time and
 * fires them in batches of scheduleBatchSize runs, a few statements at once. Between rounds it
 * sleeps until the earliest next fire comes within the lookahead, at most pollIntervalMs: polling
 * is the truth for schedules created or changed elsewhere.
 */
export class Scheduler {
  private running = false;
  private loop: Promise<void> = Promise.resolve();
  private sleeper: { timer: NodeJS.Timeout; resolve: () => void; interruptible: boolean } | null = null;
  private readonly outage: OutageLog;
  /** Database clock minus local clock, from the last read. */
  private offsetMs = 0;
  private readonly badRows = new Set<string>();
  private woken = false;

  constructor(
    private readonly store: Store,
    private readonly registry: WorkflowRegistry,
    private readonly options: ResolvedEngineOptions,
    /** Told how many schedule slots each fire statement started (the engine's metrics). */
    private readonly onFired: (slots: number) => void = () => {},
  ) {
    this.outage = new OutageLog('scheduler', options.logger);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.interrupt();
    await this.loop;
  }

  /** Read again now (a schedule was created or changed by this process). */
  wake(): void {
    this.woken = true;
    this.interrupt();
  }

  private async run(): Promise<void> {
    while (this.running) {
      let waitMs: number;
      try {
        waitMs = await this.round();
        this.outage.ok();
      } catch (err) {
        this.outage.failed(err);
        waitMs = this.outage.backoffMs() || this.options.pollIntervalMs;
      }
      if (this.running && waitMs > 0 && !this.woken) await this.sleep(waitMs);
      this.woken = false;
    }
  }

  /** One round; returns how long to wait before the next. Exposed for tests. */
  async round(): Promise<number> {
    const { pollIntervalMs, scheduleBatchSize: batch } = this.options;
    const names = this.registry.names();
    if (!names.length) return pollIntervalMs;
    const plans: FirePlan[] = [];
    const leftOut: LeftOut = new Map();
    let after: { nextFireAt: number; id: string } | null = null;
    let earliest: number | null = null;
    let more = false;
    for (;;) {
      const sent = Date.now();
      const page = await selectDueSchedules(this.store, names, SCHEDULE_LOOKAHEAD_MS, batch, after);
      this.offsetMs = page.dbNow - Math.round((sent + Date.now()) / 2);
      if (after === null) earliest = page.earliest;
      const due = page.rows.filter((r) => r.nextFireAt <= page.dbNow + SCHEDULE_LOOKAHEAD_MS);
      for (const row of page.rows) {
        const plan = this.plan(row, page.dbNow, leftOut);
        if (plan) plans.push(plan);
      }
      if (due.length < batch) break;
      const last = due[due.length - 1];
      after = { nextFireAt: last.nextFireAt, id: last.id };
      if (plans.length >= SCHEDULE_MAX_PER_ROUND) {
        more = true;
        break;
      }
    }
    if (!plans.length) {
      // Nothing due (or only schedules this process cannot compute, logged): sleep until the
      // earliest next fire comes within the lookahead, at most a poll interval.
      const until = earliest === null ? pollIntervalMs : earliest - SCHEDULE_LOOKAHEAD_MS - this.dbNow();
      return until <= 0 ? pollIntervalMs : Math.min(pollIntervalMs, until);
    }
    const { applied, later } = await this.fire(plans, leftOut);
    return more || later > 0 || applied === plans.length - later ? 0 : RETRY_MS;
  }

  /** The plan of one row, or null if this process cannot compute it (logged once). */
  private plan(row: DueSchedule, dbNow: number, leftOut: LeftOut): FirePlan | null {
    let clock: CronClock;
    try {
      clock = CronClock.of(row.cron, row.timeZone);
    } catch (err) {
      if (!this.badRows.has(row.id)) {
        this.badRows.add(row.id);
        this.options.logger.error(
          `scheduler: schedule "${row.id}" has an unusable cron "${row.cron}" or time zone "${row.timeZone}" (${errorText(err)}); skipped until fixed`,
        );
      }
      return null;
    }
    const def = this.registry.get(row.workflowName);
    const releaseOnly = row.nextFireAt > dbNow + SCHEDULE_LOOKAHEAD_MS;
    const at = Math.max(dbNow, row.nextFireAt);
    const slots = releaseOnly
      ? { slots: [], nextFireAt: row.nextFireAt, leftOut: null }
      : planSlots(
          clock,
          row.nextFireAt,
          at,
          { catchUp: row.catchUp, windowMs: row.catchUpWindowMs },
          this.options.scheduleMisfireMs,
          Math.min(SCHEDULE_SLOTS_PER_ROUND, this.options.scheduleBatchSize),
        );
    if (slots.leftOut) leftOut.set(row.id, { ...slots.leftOut, catchUp: row.catchUp });
    const candidates = slots.slots.map((slot) => ({ slot, runId: scheduleRunId(row.id, slot), manual: false }));
    if (row.bufferedSlot !== null)
      candidates.unshift({ slot: row.bufferedSlot, runId: scheduleRunId(row.id, row.bufferedSlot), manual: false });
    return {
      id: row.id,
      revision: row.revision,
      nextFireAt: slots.nextFireAt,
      fireAt: releaseOnly ? dbNow : at,
      queue: def.queue,
      priority: def.options.priority ?? 0,
      timeoutMs: def.options.timeoutMs ?? null,
      candidates,
    };
  }

  /**
   * Waits for the earliest plan's time and fires every plan due by then; the later ones are left to
   * the next round (which reads again at once), so that a schedule fired now is read again with its
   * next slot rather than waiting behind a later group. Returns how many plans were applied, and how
   * many were left for later.
   */
  private async fire(plans: FirePlan[], leftOut: LeftOut): Promise<{ applied: number; later: number }> {
    plans.sort((a, b) => a.fireAt - b.fireAt);
    const wait = plans[0].fireAt - this.dbNow();
    if (wait > 0) await this.sleep(wait + 1, false);
    if (!this.running) return { applied: 0, later: plans.length };
    const now = this.dbNow();
    let j = 1;
    while (j < plans.length && plans[j].fireAt <= now) j++;
    return { applied: await this.fireGroup(plans.slice(0, j), leftOut), later: plans.length - j };
  }

  /** Batches of at most scheduleBatchSize candidates, SCHEDULE_FIRE_CONCURRENCY statements at once, starting at a random batch (instances spread out). */
  private async fireGroup(plans: FirePlan[], leftOut: LeftOut): Promise<number> {
    const batches: FirePlan[][] = [];
    let cur: FirePlan[] = [];
    let size = 0;
    for (const p of plans) {
      const n = Math.max(1, p.candidates.length);
      if (cur.length && size + n > this.options.scheduleBatchSize) {
        batches.push(cur);
        cur = [];
        size = 0;
      }
      cur.push(p);
      size += n;
    }
    if (cur.length) batches.push(cur);
    const start = Math.floor(Math.random() * batches.length);
    const queue = batches.map((_, k) => batches[(start + k) % batches.length]);
    let applied = 0;
    const workers = Array.from({ length: Math.min(SCHEDULE_FIRE_CONCURRENCY, queue.length) }, async () => {
      for (let b = queue.shift(); b; b = queue.shift()) {
        const result = await fireSchedules(this.store, b, this.options.appVersion);
        applied += result.size;
        for (const p of b) if (result.has(p.id)) this.reportLeftOut(p.id, leftOut.get(p.id));
        this.onFired(result.size);
      }
    });
    await Promise.all(workers);
    return applied;
  }

  /** The missed slots an applied plan left out (its catch-up policy), logged: the schedule's runs have a gap there. */
  private reportLeftOut(id: string, l: { from: number; before: number; catchUp: string } | undefined): void {
    if (!l) return;
    const iso = (ms: number) => new Date(ms).toISOString();
    this.options.logger.warn(
      `scheduler: schedule "${id}" missed its slots from ${iso(l.from)} to before ${iso(l.before)} (no scheduler reached them within ` +
        `the misfire tolerance, ${this.options.scheduleMisfireMs} ms); catchUp "${l.catchUp}" leaves them out`,
    );
  }

  private dbNow(): number {
    return Date.now() + this.offsetMs;
  }

  /** Sleeps; `interruptible` sleeps end early on wake() (and on stop() always). */
  private sleep(ms: number, interruptible = true): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        if (this.sleeper?.timer === timer) this.sleeper = null;
        resolve();
      }, ms);
      timer.unref?.();
      this.sleeper = { timer, resolve, interruptible };
    });
  }

  private interrupt(): void {
    const s = this.sleeper;
    if (!s || (this.running && !s.interruptible)) return;
    clearTimeout(s.timer);
    this.sleeper = null;
    s.resolve();
  }
}
