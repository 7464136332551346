// Jest in native ESM mode (Nest 12 is ESM-only): run with NODE_OPTIONS=--experimental-vm-modules.
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  moduleNameMapper: {
    '^nestjs-durable$': '<rootDir>/libs/durable/src/index.ts',
    '^nestjs-durable/(engine|testing|embedded-postgres)$': '<rootDir>/libs/durable/src/$1.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  roots: ['<rootDir>/libs', '<rootDir>/test', '<rootDir>/src'],
  testMatch: ['**/*.spec.ts', '**/*.e2e-spec.ts'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60_000,
  maxWorkers: 2,
};
