import 'reflect-metadata';
import type { WorkflowOptions } from '../definitions/definitions.js';
import { WORKFLOW_METADATA } from './metadata.js';

/**
 * Marks a method of an @Injectable() provider as a durable workflow. It takes one argument
 * (the run's input) and its body must be deterministic: side effects belong in @Step()
 * methods, time and randomness come from Durable.now()/random()/uuid().
 * Start it with `WorkflowClient.start(name, input)`; the name defaults to the method name.
 */
export function Workflow(options: WorkflowOptions = {}): MethodDecorator {
  return (_target, key, descriptor) => {
    Reflect.defineMetadata(WORKFLOW_METADATA, { ...options, name: options.name ?? String(key) }, descriptor.value as object);
    return descriptor;
  };
}
