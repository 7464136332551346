/**
 * Counters the engine keeps itself and reports through OpenTelemetry observable counters when the
 * MeterProvider collects. Counting an event is two Map lookups and an addition; a synchronous
 * Counter.add would instead make the SDK hash the attribute set on every call (its
 * `hashAttributes`: the keys sorted, then JSON), which is most of what a metric record costs.
 * The values are cumulative, as an observable counter's are: the SDK turns them into deltas for a
 * delta exporter, and a Prometheus scrape shows them as `_total` counters like a synchronous one.
 */
import type { Attributes, Meter, ObservableCounter } from '@opentelemetry/api';

/** One attribute set's count, and the attribute object it is reported with (made once). */
interface Cell {
  readonly attributes: Attributes;
  value: number;
}

/** Distinct attribute sets one counter keeps before counting the rest as overflow (as the SDK does past its own limit, 2 000 by default). */
export const MAX_COUNTED_SETS = 1_000;
const OVERFLOW: Attributes = Object.freeze({ 'otel.metric.overflow': true });

/** Counts by up to two attributes (the engine's counters have at most two: workflow and queue, step or status). */
export class CountsByAttributes {
  private readonly cells = new Map<string, Map<string, Cell>>();
  private size = 0;
  private overflow: Cell | null = null;

  constructor(
    private readonly first: string | null,
    private readonly second: string | null = null,
  ) {}

  add(n: number, first = '', second = ''): void {
    let inner = this.cells.get(first);
    const cell = inner?.get(second);
    if (cell) {
      cell.value += n;
      return;
    }
    if (this.size >= MAX_COUNTED_SETS) {
      (this.overflow ??= { attributes: OVERFLOW, value: 0 }).value += n;
      return;
    }
    const attributes: Attributes = {};
    if (this.first) attributes[this.first] = first;
    if (this.second) attributes[this.second] = second;
    if (!inner) this.cells.set(first, (inner = new Map()));
    inner.set(second, { attributes: Object.freeze(attributes), value: n });
    this.size++;
  }

  /** Reports every attribute set's count to `observe`. */
  report(observe: (value: number, attributes: Attributes) => void): void {
    for (const inner of this.cells.values()) for (const c of inner.values()) observe(c.value, c.attributes);
    if (this.overflow) observe(this.overflow.value, this.overflow.attributes);
  }
}

/** An observable counter of `meter` whose values are `counts`, read when the MeterProvider collects. */
export function observedCounter(meter: Meter, name: string, description: string, counts: CountsByAttributes): ObservableCounter {
  const counter = meter.createObservableCounter(name, { description });
  counter.addCallback((result) => counts.report((value, attributes) => result.observe(value, attributes)));
  return counter;
}
