/**
 * The engine's metrics, through the OpenTelemetry metrics API: counters the engine keeps itself and
 * reports through observable counters (counts.ts: counting an event costs a Map lookup, not an SDK
 * record), histograms recorded where things happen (with attribute objects made once), and
 * observable gauges (queue depth, oldest due run, active runs, overdue schedules) read when the
 * app's MeterProvider collects — the queue and schedule figures from ONE query per collection (not
 * per run), shared between readers collecting within `minIntervalMs`.
 */
import type { Attributes, Histogram, Meter, ObservableGauge } from '@opentelemetry/api';
import { errorText } from '../errors/error-text.js';
import type { DurableLogger } from '../config/options.js';
import { CountsByAttributes, observedCounter } from './counts.js';
import type { OtelApi } from './otel-api.js';
import { ATTR, INSTRUMENTATION_NAME } from './tracing.js';

/** Runs of a queue in a state, as the figures query counts them. */
export interface QueueFigure {
  queue: string;
  /** due: PENDING or WAITING and due now; delayed: PENDING not due yet; waiting: WAITING not due yet; running. */
  state: 'due' | 'delayed' | 'waiting' | 'running';
  count: number;
  /** For `due`: seconds since the oldest due run became due (the queue's lag). */
  oldestDueSeconds: number | null;
}

/** Everything the gauges show, from one query. */
export interface ClusterFigures {
  queues: QueueFigure[];
  /** Active schedules whose next fire time has passed, and by how long the oldest one is late. */
  schedulesOverdue: number;
  scheduleLagSeconds: number;
}

/** Where the gauges read from (given by the engine). */
export interface MetricSources {
  figures: () => Promise<ClusterFigures>;
  /** Runs executing in this process, by queue. */
  activeRuns: () => Map<string, number>;
}

/** Seconds buckets for step durations and claim latencies (5 ms … 5 min). */
const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

interface Instruments {
  stepDuration: Histogram;
  claimDuration: Histogram;
  claimDelay: Histogram;
}

/** What the engine's counters have counted, reported by the observable counters of one Meter. */
interface Counts {
  runsStarted: CountsByAttributes;
  runsFinished: CountsByAttributes;
  stepRetries: CountsByAttributes;
  leaseLost: CountsByAttributes;
  schedulesFired: CountsByAttributes;
}

/**
 * The counts of every engine of this process that reports to a Meter (a MeterProvider's meter for
 * this library is one object): engines sharing a MeterProvider add to the same counts, as their
 * records to one synchronous counter would add up, and each count is observed once per collection.
 */
const countsByMeter = new WeakMap<Meter, Counts>();

function countsOf(meter: Meter): Counts {
  let c = countsByMeter.get(meter);
  if (c) return c;
  c = {
    runsStarted: new CountsByAttributes(ATTR.workflow, ATTR.queue),
    runsFinished: new CountsByAttributes(ATTR.workflow, ATTR.status),
    stepRetries: new CountsByAttributes(ATTR.workflow, ATTR.step),
    leaseLost: new CountsByAttributes(ATTR.workflow),
    schedulesFired: new CountsByAttributes(null),
  };
  observedCounter(meter, 'durable.runs.started', 'Runs started (inserted), by workflow and queue.', c.runsStarted);
  observedCounter(
    meter,
    'durable.runs.finished',
    'Runs ended by their execution, by workflow and status (SUCCEEDED, FAILED, CANCELLED).',
    c.runsFinished,
  );
  observedCounter(meter, 'durable.step.retries', 'Step attempts that failed and were retried.', c.stepRetries);
  observedCounter(
    meter,
    'durable.lease.lost',
    'Executions stopped because their lease moved on (expired, swept, claimed elsewhere).',
    c.leaseLost,
  );
  observedCounter(meter, 'durable.schedules.fired', 'Runs started by schedules (slots fired).', c.schedulesFired);
  countsByMeter.set(meter, c);
  return c;
}

/** Distinct attribute sets kept for reuse; past this many the cache starts over (a bound, not an expected size). */
const MAX_ATTRIBUTE_SETS = 10_000;

export class DurableMetrics {
  private i: Instruments | null = null;
  private counts: Counts | null = null;
  /**
   * Attribute objects by their values, built once and reused by every record: a step's duration,
   * a run's start or end allocates no object on the hot path (the set of workflows, steps, queues
   * and statuses is small).
   */
  private readonly attributeSets = new Map<string, Attributes>();
  /** The step duration's attribute objects by workflow, then step: [SUCCEEDED, FAILED] (no key string built per record). */
  private readonly stepSets = new Map<string, Map<string, readonly [Attributes, Attributes]>>();
  private cached: { at: number; figures: Promise<ClusterFigures> } | null = null;

  constructor(private readonly minIntervalMs = 1_000) {}

  get enabled(): boolean {
    return this.i !== null;
  }

  /** Creates the instruments on the global MeterProvider (the API's no-op one until an SDK registers). @internal */
  enable(api: OtelApi, sources: MetricSources, logger: DurableLogger): void {
    const meter: Meter = api.metrics.getMeter(INSTRUMENTATION_NAME);
    const seconds = { unit: 's', advice: { explicitBucketBoundaries: SECONDS_BUCKETS } };
    this.counts = countsOf(meter);
    this.i = {
      stepDuration: meter.createHistogram('durable.step.duration', {
        description: 'Duration of step executions (all attempts), by workflow, step and status.',
        ...seconds,
      }),
      claimDuration: meter.createHistogram('durable.claim.duration', {
        description: 'Round trip of a claim statement, by queue.',
        ...seconds,
      }),
      claimDelay: meter.createHistogram('durable.claim.delay', {
        description: 'Time from a run becoming due to its claim (by this process clock), by queue.',
        ...seconds,
      }),
    };
    const depth = meter.createObservableGauge('durable.queue.depth', {
      description: 'Runs per queue and state (due, delayed, waiting, running); one query per collection.',
    });
    const oldest = meter.createObservableGauge('durable.queue.oldest_due_age', {
      description: 'Seconds since the oldest due, unclaimed run of the queue became due (0 when none).',
      unit: 's',
    });
    const overdue = meter.createObservableGauge('durable.schedules.overdue', { description: 'Active schedules past their fire time.' });
    const lag = meter.createObservableGauge('durable.schedules.lag', {
      description: 'Seconds the most overdue schedule is late (0 when none).',
      unit: 's',
    });
    const active = meter.createObservableGauge('durable.runs.active', { description: 'Runs executing in this process, by queue.' });
    const observed: ObservableGauge[] = [depth, oldest, overdue, lag];
    meter.addBatchObservableCallback(async (result) => {
      let f: ClusterFigures;
      try {
        f = await this.figures(sources);
      } catch (err) {
        logger.debug?.(`metrics: could not read the queue figures (${errorText(err)})`);
        return;
      }
      // The queues this process serves are always reported (0 when empty), so an alert sees 0, not "no data".
      const lagByQueue = new Map<string, number>([...sources.activeRuns().keys()].map((q) => [q, 0]));
      const seen = new Set(f.queues.map((q) => q.queue));
      for (const queue of lagByQueue.keys()) {
        if (!seen.has(queue)) result.observe(depth, 0, { [ATTR.queue]: queue, 'durable.state': 'due' });
      }
      for (const q of f.queues) {
        result.observe(depth, q.count, { [ATTR.queue]: q.queue, 'durable.state': q.state });
        if (q.state === 'due') lagByQueue.set(q.queue, q.oldestDueSeconds ?? 0);
        else if (!lagByQueue.has(q.queue)) lagByQueue.set(q.queue, 0);
      }
      for (const [queue, s] of lagByQueue) result.observe(oldest, s, { [ATTR.queue]: queue });
      result.observe(overdue, f.schedulesOverdue);
      result.observe(lag, f.scheduleLagSeconds);
    }, observed);
    active.addCallback((result) => {
      for (const [queue, n] of sources.activeRuns()) result.observe(n, { [ATTR.queue]: queue });
    });
  }

  runsStarted(workflow: string, queue: string, n = 1): void {
    this.counts?.runsStarted.add(n, workflow, queue);
  }

  runFinished(workflow: string, status: string): void {
    this.counts?.runsFinished.add(1, workflow, status);
  }

  stepFinished(workflow: string, step: string, status: 'SUCCEEDED' | 'FAILED', seconds: number): void {
    if (!this.i) return;
    let byStep = this.stepSets.get(workflow);
    let sets = byStep?.get(step);
    if (!sets) {
      if (!byStep || byStep.size >= MAX_ATTRIBUTE_SETS) this.stepSets.set(workflow, (byStep = new Map()));
      const of = (s: string) => this.attributes(ATTR.workflow, workflow, ATTR.step, step, ATTR.status, s);
      byStep.set(step, (sets = [of('SUCCEEDED'), of('FAILED')]));
    }
    this.i.stepDuration.record(seconds, sets[status === 'SUCCEEDED' ? 0 : 1]);
  }

  stepRetried(workflow: string, step: string): void {
    this.counts?.stepRetries.add(1, workflow, step);
  }

  leaseLost(workflow: string): void {
    this.counts?.leaseLost.add(1, workflow);
  }

  /** A claim statement's round trip, and how late each claimed run was (due → claimed). */
  claimed(queue: string, seconds: number, dueSince: ReadonlyArray<Date | null | undefined>): void {
    if (!this.i) return;
    const attrs = this.attributes(ATTR.queue, queue);
    this.i.claimDuration.record(seconds, attrs);
    const now = Date.now();
    for (const d of dueSince) if (d) this.i.claimDelay.record(Math.max(0, (now - d.getTime()) / 1000), attrs);
  }

  schedulesFired(n: number): void {
    if (n > 0) this.counts?.schedulesFired.add(n);
  }

  /** The attribute object of these (name, value) pairs, made once. */
  private attributes(...pairs: string[]): Attributes {
    const key = pairs.join('\u0000');
    let a = this.attributeSets.get(key);
    if (!a) {
      if (this.attributeSets.size >= MAX_ATTRIBUTE_SETS) this.attributeSets.clear();
      a = {};
      for (let k = 0; k < pairs.length; k += 2) a[pairs[k]] = pairs[k + 1];
      this.attributeSets.set(key, Object.freeze(a));
    }
    return a;
  }

  /** One figures query per minIntervalMs at most, whatever the number of readers collecting. */
  private figures(sources: MetricSources): Promise<ClusterFigures> {
    const now = Date.now();
    if (!this.cached || now - this.cached.at >= this.minIntervalMs) {
      const figures = sources.figures();
      this.cached = { at: now, figures };
      figures.catch(() => (this.cached = null));
    }
    return this.cached.figures;
  }
}
