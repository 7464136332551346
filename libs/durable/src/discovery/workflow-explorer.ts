import { Inject, Injectable, Logger } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { InstanceWrapper } from '@nestjs/core/injector/instance-wrapper.js';
import { DurableError } from '../errors/index.js';
import type { WorkflowOptions } from '../engine/definitions.js';
import type { WorkflowRegistry } from '../engine/registry.js';
import { STEP_METADATA, WORKFLOW_METADATA } from '../decorators/metadata.js';

/** Finds @Workflow() methods on the app's providers at bootstrap and registers them. */
@Injectable()
export class WorkflowExplorer {
  private readonly logger = new Logger('Durable');

  constructor(
    @Inject(DiscoveryService) private readonly discovery: DiscoveryService,
    @Inject(MetadataScanner) private readonly scanner: MetadataScanner,
  ) {}

  explore(registry: WorkflowRegistry): void {
    for (const wrapper of this.discovery.getProviders()) {
      if (wrapper.isAlias || !wrapper.metatype || typeof wrapper.metatype !== 'function') continue;
      const proto = (wrapper.metatype as { prototype?: object }).prototype;
      if (!proto) continue;
      const methods = this.scanner.getAllMethodNames(proto);
      const workflowMethods = methods.filter((m) => Reflect.hasMetadata(WORKFLOW_METADATA, (proto as Record<string, object>)[m]));
      if (!workflowMethods.length) continue;
      this.assertStatic(wrapper, workflowMethods[0]);
      const instance = wrapper.instance as Record<string, (input: unknown) => unknown>;
      for (const method of workflowMethods) {
        const fn = (proto as Record<string, object>)[method];
        if (Reflect.hasMetadata(STEP_METADATA, fn)) {
          throw new DurableError('BAD_DECORATORS', `${wrapper.name}.${method}() has both @Workflow() and @Step(); a method is one or the other.`);
        }
        const options = Reflect.getMetadata(WORKFLOW_METADATA, fn) as WorkflowOptions & { name: string };
        registry.register({
          name: options.name,
          queue: options.queue ?? 'default',
          options,
          run: async (input) => instance[method](input),
          className: String(wrapper.name),
          methodName: method,
        });
      }
    }
    this.logger.log(`registered ${registry.names().length} workflow(s): ${registry.names().join(', ') || '(none)'}`);
  }

  private assertStatic(wrapper: InstanceWrapper, method: string): void {
    if (wrapper.isTransient || !wrapper.isDependencyTreeStatic()) {
      throw new DurableError(
        'BAD_WORKFLOW_PROVIDER',
        `${String(wrapper.name)}.${method}() is a @Workflow() on a ${wrapper.isTransient ? 'transient' : 'request-scoped'} ` +
          `provider (or one that depends on a request-scoped provider). Workflows run outside any request: make ` +
          `${String(wrapper.name)} a singleton (default scope) and pass request data in the workflow input.`,
      );
    }
  }
}
