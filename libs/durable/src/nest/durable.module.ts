import { Module, type DynamicModule } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { WorkflowClient } from './workflow-client.js';
import { WorkflowExplorer } from './workflow-explorer.js';
import { DurableRuntime } from './durable-runtime.js';
import { withAdmin } from './admin/admin-module.js';
import { withEndpoints } from './endpoints-module.js';
import { ConfigurableModuleClass, type ASYNC_OPTIONS_TYPE, type OPTIONS_TYPE } from './module-definition.js';
import { checkModuleOptions } from './module-options-check.js';

/**
 * Durable workflows for the app: `DurableModule.forRoot({ prisma: PrismaService })`.
 * Global by default, so WorkflowClient can be injected anywhere.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [WorkflowExplorer, DurableRuntime, WorkflowClient],
  exports: [WorkflowClient, DurableRuntime],
})
export class DurableModule extends ConfigurableModuleClass {
  /** With `admin: { guards }`, the module also serves the admin API and dashboard (see DurableAdminOptions). */
  static override forRoot(options: typeof OPTIONS_TYPE): DynamicModule {
    checkModuleOptions(options, true);
    return withAdmin(withEndpoints(super.forRoot(options), options ?? {}), options?.admin);
  }

  static override forRootAsync(options: typeof ASYNC_OPTIONS_TYPE): DynamicModule {
    return withAdmin(withEndpoints(super.forRootAsync(options), options ?? {}), options?.admin);
  }
}
