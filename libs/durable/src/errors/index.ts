export * from './durable-error.js';
export * from './schema-errors.js';
