import { Inject, Injectable, Logger } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { InvalidDefinitionError } from '../errors/index.js';
import type { WorkflowOptions } from '../definitions/definitions.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import { ON_EVENT_METADATA, STEP_METADATA, WORKFLOW_METADATA } from '../decorators/metadata.js';
import type { OnDurableEventMetadata } from '../decorators/on-durable-event.decorator.js';
import type { DurableEngine } from '../engine/durable-engine.js';

/**
 * Finds @Workflow() methods on the app's providers at bootstrap and registers them: class
 * providers, and factory (`useFactory`) or value (`useValue`) providers whose instance is of a
 * class with @Workflow() methods (found through the instance's prototype).
 */
@Injectable()
export class WorkflowExplorer {
  private readonly logger = new Logger('Durable');

  constructor(
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
  ) {}

  explore(registry: WorkflowRegistry): void {
    for (const wrapper of this.discovery.getProviders()) {
      if (wrapper.isAlias) continue;
      const proto = prototypeOf(wrapper);
      if (!proto) continue;
      const workflowMethods = this.scanner.getAllMethodNames(proto).filter((m) => Reflect.hasMetadata(WORKFLOW_METADATA, proto[m]));
      if (!workflowMethods.length) continue;
      this.assertStatic(wrapper, workflowMethods[0]);
      const instance = wrapper.instance as Record<string, (input: unknown) => unknown>;
      const className = (proto.constructor as { name?: string } | undefined)?.name || String(wrapper.name);
      for (const method of workflowMethods) {
        const fn = proto[method];
        if (Reflect.hasMetadata(STEP_METADATA, fn)) {
          throw new InvalidDefinitionError(`${className}.${method}() has both @Workflow() and @Step(); a method is one or the other.`);
        }
        const options = Reflect.getMetadata(WORKFLOW_METADATA, fn) as WorkflowOptions & { name: string };
        registry.register({
          name: options.name,
          queue: options.queue ?? 'default',
          options,
          run: async (input) => instance[method](input),
          className,
          methodName: method,
        });
      }
    }
    this.logger.log(`registered ${registry.names().length} workflow(s): ${registry.names().join(', ') || '(none)'}`);
  }

  /** Registers the @OnDurableEvent() methods of the app's providers as lifecycle hooks of the engine. */
  exploreHooks(engine: DurableEngine): void {
    const names: string[] = [];
    for (const wrapper of this.discovery.getProviders()) {
      if (wrapper.isAlias) continue;
      const proto = prototypeOf(wrapper);
      if (!proto) continue;
      const methods = this.scanner.getAllMethodNames(proto).filter((m) => Reflect.hasMetadata(ON_EVENT_METADATA, proto[m]));
      if (!methods.length) continue;
      this.assertStatic(wrapper, methods[0], '@OnDurableEvent()', 'Lifecycle hooks');
      const instance = wrapper.instance as Record<string, (event: unknown) => unknown>;
      const className = (proto.constructor as { name?: string } | undefined)?.name || String(wrapper.name);
      for (const method of methods) {
        const meta = Reflect.getMetadata(ON_EVENT_METADATA, proto[method]) as OnDurableEventMetadata;
        const consumer = meta.consumer ?? `${className}.${method}`;
        engine.onEvent(meta.types, (event) => instance[method](event), { consumer });
        names.push(consumer);
      }
    }
    if (names.length) this.logger.log(`registered ${names.length} lifecycle hook(s): ${names.join(', ')}`);
  }

  private assertStatic(wrapper: InstanceWrapper, method: string, decorator = '@Workflow()', what = 'Workflows'): void {
    if (wrapper.isTransient || !wrapper.isDependencyTreeStatic()) {
      throw new InvalidDefinitionError(
        `${String(wrapper.name)}.${method}() is a ${decorator} on a ${wrapper.isTransient ? 'transient' : 'request-scoped'} ` +
          `provider (or one that depends on a request-scoped provider). ${what} run outside any request: make ` +
          `${String(wrapper.name)} a singleton (default scope) and pass request data in the workflow input.`,
      );
    }
  }
}

/**
 * The prototype holding a provider's methods: its class's, for a class provider; for a factory or
 * value provider (whose metatype is the factory, or nothing), the prototype of its instance.
 */
function prototypeOf(wrapper: InstanceWrapper): Record<string, object> | null {
  const instance = wrapper.instance as object | null | undefined;
  if (Array.isArray(wrapper.inject) || !wrapper.metatype) {
    if (!instance || typeof instance !== 'object') return null;
    const proto = Object.getPrototypeOf(instance) as Record<string, object> | null;
    return proto && proto !== Object.prototype ? proto : null;
  }
  const proto = (wrapper.metatype as { prototype?: Record<string, object> } | null)?.prototype;
  return proto ?? null;
}
