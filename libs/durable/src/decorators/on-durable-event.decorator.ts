import 'reflect-metadata';
import type { DurableEventType } from '../definitions/hooks.js';
import { ON_EVENT_METADATA } from './metadata.js';

/** What @OnDurableEvent() records on the method. */
export interface OnDurableEventMetadata {
  types: DurableEventType[];
  consumer?: string;
}

/**
 * Marks a method of an @Injectable() provider as a lifecycle hook: it is called with each
 * DurableLifecycleEvent of the given types (run.succeeded, run.failed, run.cancelled, step.retried,
 * lease.lost) after the change committed, at least once, from one instance at a time, without ever
 * holding up a run. `consumer` (default `Class.method`) names its durable cursor: keep it stable.
 */
export function OnDurableEvent(types: DurableEventType | DurableEventType[], options: { consumer?: string } = {}): MethodDecorator {
  return (_target, _key, descriptor) => {
    const meta: OnDurableEventMetadata = { types: Array.isArray(types) ? types : [types], consumer: options?.consumer };
    Reflect.defineMetadata(ON_EVENT_METADATA, meta, descriptor.value as object);
    return descriptor;
  };
}
