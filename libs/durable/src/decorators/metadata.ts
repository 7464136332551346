/** Reflect-metadata keys under which the decorators record their options. */
export const WORKFLOW_METADATA = 'nestjs-durable:workflow';
export const STEP_METADATA = 'nestjs-durable:step';
export const ON_EVENT_METADATA = 'nestjs-durable:on-event';
