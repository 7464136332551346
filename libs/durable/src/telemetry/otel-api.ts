/**
 * `@opentelemetry/api` is an optional peer dependency: loaded once, with a dynamic import, when an
 * engine starts. Without the package every telemetry call of the engine is a no-op; with it but
 * without an SDK registered, the API's own no-op tracer and meter answer (a few function calls).
 */
import type * as OtelApiModule from '@opentelemetry/api';

export type OtelApi = typeof OtelApiModule;

let loading: Promise<OtelApi | null> | null = null;

/** The OpenTelemetry API, or null when the package is not installed. */
export function loadOtelApi(): Promise<OtelApi | null> {
  loading ??= import('@opentelemetry/api').then(
    (m) => ((m as { trace?: unknown }).trace ? m : (m as unknown as { default: OtelApi }).default),
    () => null,
  );
  return loading;
}
