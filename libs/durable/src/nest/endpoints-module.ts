import type { DynamicModule } from '@nestjs/common';
import { InvalidOptionsError } from '../errors/index.js';
import { DURABLE_ENDPOINTS, type DurableEndpointOptions } from './module-definition.js';
import { createCallbacksController, createSignalsController } from './signal-endpoints.js';

const PATH = /^[A-Za-z0-9._~/-]{1,200}$/;

/** The endpoint options with their defaults; a bad path is an InvalidOptionsError at boot. */
export function resolveEndpoints(o: DurableEndpointOptions = {}): Required<DurableEndpointOptions> {
  const signalPath = o.signalPath ?? 'durable/signals';
  const callbackPath = o.callbackPath ?? 'durable/callbacks';
  for (const [name, p] of [
    ['signalPath', signalPath],
    ['callbackPath', callbackPath],
  ] as const) {
    if (p !== false && (typeof p !== 'string' || !PATH.test(p) || p.includes('//')))
      throw new InvalidOptionsError(`DurableModule: ${name} must be a URL path such as durable/signals (got ${JSON.stringify(p)}).`);
  }
  if (o.signals !== undefined && !Array.isArray(o.signals))
    throw new InvalidOptionsError('DurableModule: signals must be a list of defineSignal() results.');
  for (const s of o.signals ?? []) {
    if (s.endpoint !== false && !s.guards?.length && !s.unsafeNoGuard)
      throw new InvalidOptionsError(
        `DurableModule: signal "${s.name}" has no guards: its endpoint would let anyone who reaches the app send it. ` +
          "Give it guards (defineSignal(name, { guards: [YourGuard] })), or endpoint: false (no endpoint: a callback's payload check, " +
          'or a signal your own code sends), or unsafeNoGuard: true to mount it unguarded on purpose.',
      );
  }
  const trim = (p: string) => p.replace(/^\/+|\/+$/g, '');
  return { signals: o.signals ?? [], signalPath: trim(signalPath), callbackPath: callbackPath === false ? false : trim(callbackPath) };
}

/**
 * Adds the module's own endpoints to its definition: one controller for the app's signals (when it
 * has any) and the callback endpoint (unless `callbackPath: false`), and the endpoint options the
 * runtime hands to the engine (the signals, the callback path its URLs point to).
 */
export function withEndpoints(definition: DynamicModule, options: DurableEndpointOptions): DynamicModule {
  const endpoints = resolveEndpoints(options);
  const controllers = [
    ...(endpoints.signals.some((s) => s.endpoint)
      ? [
          createSignalsController(
            endpoints.signalPath,
            endpoints.signals.filter((s) => s.endpoint),
          ),
        ]
      : []),
    ...(endpoints.callbackPath !== false ? [createCallbacksController(endpoints.callbackPath)] : []),
  ];
  return {
    ...definition,
    controllers: [...(definition.controllers ?? []), ...controllers],
    providers: [...(definition.providers ?? []), { provide: DURABLE_ENDPOINTS, useValue: endpoints }],
  };
}
