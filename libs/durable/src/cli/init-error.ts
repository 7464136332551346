import { DurableError } from '../errors/durable-error.js';

/** Why `nestjs-durable init` changed nothing, and what to do about it. Exit code 1 (2: bad command line). */
export class InitError extends DurableError {
  constructor(
    code: InitErrorCode,
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(code, message);
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
