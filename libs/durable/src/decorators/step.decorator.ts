import 'reflect-metadata';
import { InvalidOptionsError } from '../errors/index.js';
import type { StepDefinition, StepOptions } from '../definitions/definitions.js';
import { registerStepMethod } from '../definitions/step-methods.js';
import { invokeStep } from '../workflow/step-runner.js';
import { checkStepOptions } from '../config/option-checks.js';
import { STEP_METADATA } from './metadata.js';

/**
 * Marks a provider method as a durable step. Called inside a running workflow, its result is
 * checkpointed once it succeeds, replayed instead of re-executed after a crash, and retried
 * with back-off when it throws. Called anywhere else it is a plain method call.
 * Plain steps run at least once (make them idempotent); `transactional: true` steps commit
 * their database writes (through Durable.tx()) exactly once, with the checkpoint.
 * `compensate: 'method'` names what undoes the step (see StepOptions.compensate).
 */
export function Step(options: StepOptions = {}): MethodDecorator {
  return (_target, key, descriptor) => {
    const original = descriptor.value as unknown as (...args: unknown[]) => unknown;
    if (typeof original !== 'function') throw new TypeError(`@Step() must decorate a method (${String(key)})`);
    const owner = typeof _target === 'function' ? _target.name : (_target as { constructor?: { name?: string } }).constructor?.name;
    const where = `@Step() on ${owner ?? '?'}.${String(key)}()`;
    checkStepOptions(where, options);
    if (typeof options.compensate === 'string') checkCompensationMethod(where, _target, String(key), options.compensate);
    const def: StepDefinition = { name: options.name ?? String(key), options };
    // Declared parameters (TypeScript's design:paramtypes counts optional and defaulted ones too):
    // a compensation gets the step's arguments, one per parameter, then the step's result.
    const paramTypes = Reflect.getMetadata('design:paramtypes', _target, key) as unknown[] | undefined;
    const arity = paramTypes?.length ?? original.length;
    const wrapped = function (this: unknown, ...args: unknown[]) {
      return invokeStep(def, () => original.apply(this, args), { self: this, args, arity });
    };
    Object.defineProperty(wrapped, 'name', { value: original.name });
    // Keep metadata other decorators put on the original method.
    for (const k of Reflect.getMetadataKeys(original)) Reflect.defineMetadata(k, Reflect.getMetadata(k, original), wrapped);
    Reflect.defineMetadata(STEP_METADATA, def, wrapped);
    registerStepMethod(wrapped, def, original);
    (descriptor as PropertyDescriptor).value = wrapped;
    return descriptor;
  };
}

/**
 * The compensation a step names is a method of the same class (decorators run once the class body
 * is complete, so a method declared further down is there already).
 */
function checkCompensationMethod(where: string, target: object, key: string, method: string): void {
  if (method === key) throw new InvalidOptionsError(`${where}: compensate names the step itself; name the method that undoes it.`);
  if (typeof (target as Record<string, unknown>)[method] !== 'function') {
    throw new InvalidOptionsError(
      `${where}: compensate: "${method}" is not a method of this class. Name a method of the same class; it is called ` +
        `with the step's arguments followed by its result.`,
    );
  }
}
