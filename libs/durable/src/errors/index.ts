export * from './durable-error.js';
