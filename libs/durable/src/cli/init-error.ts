/**
 * Why `nestjs-durable init` changed nothing, and what to do about it. Exit code 1 (2: bad command
 * line). A command-line error, not one of the library's DurableErrors: apps never meet it.
 */
export class InitError extends Error {
  constructor(
    readonly code: InitErrorCode,
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message);
    this.name = 'InitError';
  }
}

export type InitErrorCode =
  | 'USAGE'
  | 'NO_SCHEMA'
  | 'NO_CONFIG'
  | 'CONFIG_NOT_EDITABLE'
  | 'SCHEMA_FOLDER_UNSAFE'
  | 'UNKNOWN_GENERATOR'
  | 'DURABLE_MODELS_ELSEWHERE'
  | 'DURABLE_PRISMA_OUTDATED'
  | 'DURABLE_PRISMA_NEWER'
  | 'PACKAGE_FILE_MISSING';
