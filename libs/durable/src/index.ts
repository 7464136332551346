// nestjs-durable: the public API for Nest apps (the Nest-free engine is nestjs-durable/engine,
// whose exports are all available here too).
export * from './engine.js';
export { DurableModule } from './nest/durable.module.js';
export type { DurableModuleOptions } from './nest/module-definition.js';
export type { DurableAdminOptions } from './nest/admin/admin-options.js';
export type { ActorResolver } from './nest/admin/request-actor.js';
export { WorkflowClient, type WorkflowMethodKeys, type InputOf, type OutputOf } from './nest/workflow-client.js';
export { DurableRuntime } from './nest/durable-runtime.js';
export type { StreamEventsOptions } from './nest/stream-events.js';
export { verifyApp, type VerifyAppOptions } from './nest/verify-app.js';
export { Workflow } from './decorators/workflow.decorator.js';
export { Step } from './decorators/step.decorator.js';
export { DurableCron, type DurableCronOptions } from './decorators/durable-cron.decorator.js';
export { OnDurableEvent } from './decorators/on-durable-event.decorator.js';
