// Public API of nestjs-durable.
export { DurableModule } from './durable.module.js';
export type { DurableModuleOptions } from './module-definition.js';
export { WorkflowClient } from './client/workflow-client.js';
export { DurableRuntime } from './durable-runtime.js';
export { Workflow } from './decorators/workflow.decorator.js';
export { Step } from './decorators/step.decorator.js';
export { Durable } from './engine/durable-api.js';
export { WorkflowHandle } from './engine/handle.js';
export { ChildWorkflowHandle, type ChildOptions } from './engine/children.js';
export type { RunEvent } from './engine/run-events.js';
export { DurableEngine, type DurableEngineConfig, type RunView, type StartOptions, type SendOptions } from './engine/engine.js';
export { WorkflowRegistry } from './engine/registry.js';
export type { WorkflowOptions, StepOptions, StepTransactionOptions, WorkflowDefinition } from './engine/definitions.js';
export type { EngineOptions, QueueOptions, DurableLogger } from './engine/options.js';
export type { RetryPolicy } from './engine/retry.js';
export type { RunStatus } from './store/run-store.js';
export { encode as encodeValue, decode as decodeValue } from './engine/codec.js';
export * from './errors/index.js';
