/**
 * The engine's telemetry: traces (tracing.ts) and metrics (metrics.ts) through `@opentelemetry/api`,
 * loaded when the engine starts (otel-api.ts). Until then, and for good without the package or with
 * an option set to false, every call is a no-op that costs a null check.
 */
import type { TelemetryOptions } from '../config/observability-options.js';
import type { DurableLogger } from '../config/options.js';
import { DurableMetrics, type MetricSources } from './metrics.js';
import { loadOtelApi } from './otel-api.js';
import { Tracing } from './tracing.js';

export class Telemetry {
  readonly tracing = new Tracing();
  readonly metrics: DurableMetrics;
  private loading: Promise<void> | null = null;

  constructor(private readonly options: Required<TelemetryOptions>) {
    this.metrics = new DurableMetrics(options.figuresMinIntervalMs);
  }

  /** Loads the API (once) and turns on what the options ask for. */
  load(sources: MetricSources, logger: DurableLogger): Promise<void> {
    this.loading ??= (async () => {
      if (!this.options.traces && !this.options.metrics) return;
      const api = await loadOtelApi();
      if (!api) return;
      if (this.options.traces) this.tracing.enable(api);
      if (this.options.metrics) this.metrics.enable(api, sources, logger);
    })();
    return this.loading;
  }
}
