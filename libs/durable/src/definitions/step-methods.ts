import type { StepDefinition } from './definitions.js';

/**
 * The methods @Step() wrapped: for a compensation named by a step (`compensate: 'release'`), the
 * engine runs the method's own code under its own @Step options, as one durable step of the run.
 */
const methods = new WeakMap<object, { def: StepDefinition; original: (...args: unknown[]) => unknown }>();

/** Names of every @Step() method declared in the code loaded (a step no longer declared was removed). */
const declaredNames = new Set<string>();

export function registerStepMethod(wrapped: object, def: StepDefinition, original: (...args: unknown[]) => unknown): void {
  methods.set(wrapped, { def, original });
  declaredNames.add(def.name);
}

/** True when some @Step() method of the code loaded has this step name. */
export function isDeclaredStep(name: string): boolean {
  return declaredNames.has(name);
}

/** The definition and undecorated code of a method @Step() wrapped; undefined for any other function. */
export function stepMethod(fn: unknown): { def: StepDefinition; original: (...args: unknown[]) => unknown } | undefined {
  return typeof fn === 'function' ? methods.get(fn) : undefined;
}
