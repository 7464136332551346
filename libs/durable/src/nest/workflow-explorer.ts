import { Inject, Injectable, Logger } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { InvalidDefinitionError } from '../errors/index.js';
import type { WorkflowOptions } from '../definitions/definitions.js';
import type { WorkflowRegistry } from '../definitions/registry.js';
import { STEP_METADATA, WORKFLOW_METADATA } from '../decorators/metadata.js';

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

  private assertStatic(wrapper: InstanceWrapper, method: string): void {
    if (wrapper.isTransient || !wrapper.isDependencyTreeStatic()) {
      throw new InvalidDefinitionError(
        `${String(wrapper.name)}.${method}() is a @Workflow() on a ${wrapper.isTransient ? 'transient' : 'request-scoped'} ` +
          `provider (or one that depends on a request-scoped provider). Workflows run outside any request: make ` +
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
