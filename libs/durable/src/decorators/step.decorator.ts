import 'reflect-metadata';
import type { StepDefinition, StepOptions } from '../definitions/definitions.js';
import { invokeStep } from '../workflow/step-runner.js';
import { checkStepOptions } from '../config/option-checks.js';
import { STEP_METADATA } from './metadata.js';

/**
 * Marks a provider method as a durable step. Called inside a running workflow, its result is
 * checkpointed once it succeeds, replayed instead of re-executed after a crash, and retried
 * with back-off when it throws. Called anywhere else it is a plain method call.
 * Plain steps run at least once (make them idempotent); `transactional: true` steps commit
 * their database writes (through Durable.tx()) exactly once, with the checkpoint.
 */
export function Step(options: StepOptions = {}): MethodDecorator {
  return (_target, key, descriptor) => {
    const original = descriptor.value as unknown as (...args: unknown[]) => unknown;
    if (typeof original !== 'function') throw new TypeError(`@Step() must decorate a method (${String(key)})`);
    const owner = typeof _target === 'function' ? _target.name : (_target as { constructor?: { name?: string } }).constructor?.name;
    checkStepOptions(`@Step() on ${owner ?? '?'}.${String(key)}()`, options);
    const def: StepDefinition = { name: options.name ?? String(key), options };
    const wrapped = function (this: unknown, ...args: unknown[]) {
      return invokeStep(def, () => original.apply(this, args));
    };
    Object.defineProperty(wrapped, 'name', { value: original.name });
    // Keep metadata other decorators put on the original method.
    for (const k of Reflect.getMetadataKeys(original)) Reflect.defineMetadata(k, Reflect.getMetadata(k, original), wrapped);
    Reflect.defineMetadata(STEP_METADATA, def, wrapped);
    (descriptor as PropertyDescriptor).value = wrapped;
    return descriptor;
  };
}
