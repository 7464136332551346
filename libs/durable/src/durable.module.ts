import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { WorkflowClient } from './client/workflow-client.js';
import { WorkflowExplorer } from './discovery/workflow-explorer.js';
import { DurableRuntime } from './durable-runtime.js';
import { ConfigurableModuleClass } from './module-definition.js';

/**
 * Durable workflows for the app: `DurableModule.forRoot({ prisma: PrismaService })`.
 * Global by default, so WorkflowClient can be injected anywhere.
 */
@Module({
  imports: [DiscoveryModule],
  providers: [WorkflowExplorer, DurableRuntime, WorkflowClient],
  exports: [WorkflowClient, DurableRuntime],
})
export class DurableModule extends ConfigurableModuleClass {}
