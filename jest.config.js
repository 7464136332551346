// Jest in native ESM mode (Nest 12 is ESM-only): run with NODE_OPTIONS=--experimental-vm-modules.
//
// Four tiers (jest projects), run together by `npm test` and alone by `npm run test:<tier>` or
// `npm test -- --selectProjects <tier>`:
//   unit         no database, no child process: the library's own specs and the test files below
//   integration  a database, in this process (every test file not listed in another tier)
//   process      worker processes, the app or the CLI as child processes, kills, chaos
//   browser      the dashboard in headless Chromium
// The global setup (a PostgreSQL server and a migrated template database) runs once, and only when
// a tier that needs a database runs. A new test file lands in `integration` unless listed here.

/** Test files that touch no database and start no process (besides libs/**\/*.spec.ts). */
export const UNIT = [
  'test/admin/admin-bulk-token.spec.ts',
  'test/admin/admin-files.spec.ts',
  'test/admin/admin-params.spec.ts',
  'test/admin/dashboard-modules.spec.ts',
  'test/architecture/connection-errors.spec.ts',
  'test/architecture/layers.spec.ts',
  'test/architecture/public-api.spec.ts',
  'test/architecture/test-tiers.spec.ts',
  'test/bad-input/authoring-options.spec.ts',
  'test/bad-input/definition-options.spec.ts',
  'test/bad-input/telemetry-options.spec.ts',
  'test/chaos/chaos-checks.spec.ts',
  'test/citus/partitions.spec.ts',
  'test/chaos/chaos-keys.spec.ts',
  'test/engine/write-batcher.spec.ts',
  'test/hardening/codec-properties.spec.ts',
  'test/package/package-metadata.spec.ts',
  'test/schedules/next-fire.spec.ts',
  'test/telemetry/counts.spec.ts',
  'test/versioning/step-matching.spec.ts',
];

/** Test files that run workers, the app, the CLI or npm as child processes (and kill them). */
export const PROCESS = [
  'test/authoring/compensation-kill.e2e-spec.ts',
  'test/chaos/chaos.e2e-spec.ts',
  'test/chaos/citus-chaos.e2e-spec.ts',
  'test/chaos/db-outage.e2e-spec.ts',
  'test/citus/distributed-processes.e2e-spec.ts',
  'test/example/crash-restart.e2e-spec.ts',
  'test/example/embedded-postgres.e2e-spec.ts',
  'test/example/quickstart.e2e-spec.ts',
  'test/failover/chaos-failover.e2e-spec.ts',
  'test/failover/follow-primary.e2e-spec.ts',
  'test/failover/read-replica.e2e-spec.ts',
  'test/flow/flow-keys-processes.e2e-spec.ts',
  'test/flow/flow-processes.e2e-spec.ts',
  'test/init/init-cli.e2e-spec.ts',
  'test/hardening/init-sql-drop.spec.ts',
  'test/hardening/thrown-values.spec.ts',
  'test/init/cli-errors.e2e-spec.ts',
  'test/init/runs-command.e2e-spec.ts',
  'test/init/schedules-command.e2e-spec.ts',
  'test/init/verify-command.e2e-spec.ts',
  'test/package/pack.e2e-spec.ts',
  'test/process/backfill-kills.e2e-spec.ts',
  'test/process/fan-out-kills.e2e-spec.ts',
  'test/process/not-kept-kills.e2e-spec.ts',
  'test/process/talk-kills.e2e-spec.ts',
  'test/process/telemetry.e2e-spec.ts',
  'test/process/workers.e2e-spec.ts',
  'test/schedules/schedules-processes.e2e-spec.ts',
  'test/transactions/atomic-start.e2e-spec.ts',
  'test/transactions/transactional-step.e2e-spec.ts',
  'test/versioning/two-builds.e2e-spec.ts',
  'test/waits/processes.e2e-spec.ts',
];

/** Test files that drive the dashboard in Chromium (test/support/chromium.ts). */
export const BROWSER = [
  'test/admin/dashboard-browser.e2e-spec.ts',
  'test/admin/dashboard-layout-browser.e2e-spec.ts',
  'test/admin/dashboard-operations-browser.e2e-spec.ts',
  'test/databases/dashboard-browser.e2e-spec.ts',
  'test/citus/dashboard-browser.e2e-spec.ts',
  'test/example/approval-browser.e2e-spec.ts',
  'test/example/assistant-stream.e2e-spec.ts',
  'test/example/dashboard-tour.e2e-spec.ts',
  'test/failover/replica-dashboard-browser.e2e-spec.ts',
  'test/flow/flow-dashboard.e2e-spec.ts',
  'test/schedules/schedules-dashboard.e2e-spec.ts',
];

const ALL = ['<rootDir>/{libs,test,src}/**/*.spec.ts', '<rootDir>/{libs,test,src}/**/*.e2e-spec.ts'];
const LIBRARY_SPECS = '<rootDir>/libs/**/*.spec.ts';
const listed = (files) => files.map((f) => `<rootDir>/${f}`);
/** testPathIgnorePatterns (regular expressions) for the listed files. */
const except = (files) => files.map((f) => `<rootDir>/${f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);

/** @type {import('jest').Config} */
const common = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  moduleNameMapper: {
    '^nestjs-durable$': '<rootDir>/libs/durable/src/index.ts',
    '^nestjs-durable/(engine|testing|embedded-postgres)$': '<rootDir>/libs/durable/src/$1.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  roots: ['<rootDir>/libs', '<rootDir>/test', '<rootDir>/src'],
};

/** @type {import('jest').Config} */
const withDatabase = {
  ...common,
  // The same file in several projects runs once per jest run (jest deduplicates global hooks).
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
};

/** @type {import('jest').Config} */
export default {
  testTimeout: 60_000,
  // Two test files at once on a two-core machine. Three kept the cores busy and the run about a fifth
  // shorter, but the timing of the process tests (leases of a second or two, a worker's claim lag)
  // then failed one test in three runs out of four.
  maxWorkers: 2,
  // A worker keeps every test file's modules it has loaded (native ESM in jest): without a limit the
  // two grew to about 3 GB each over a run. Past 1 GB after a file, a worker is replaced by a fresh
  // one (about a second): 38 integration files took 5-7 % less time and CPU with it.
  workerIdleMemoryLimit: '1GB',
  reporters: ['default', '<rootDir>/test/support/slowest-suites-reporter.js'],
  projects: [
    { ...common, displayName: 'unit', testMatch: [LIBRARY_SPECS, ...listed(UNIT)] },
    {
      ...withDatabase,
      displayName: 'integration',
      testMatch: ALL,
      testPathIgnorePatterns: ['/node_modules/', '<rootDir>/libs/', ...except([...UNIT, ...PROCESS, ...BROWSER])],
    },
    { ...withDatabase, displayName: 'process', testMatch: listed(PROCESS) },
    { ...withDatabase, displayName: 'browser', testMatch: listed(BROWSER) },
  ],
};
