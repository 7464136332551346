import { MAX_ID_LENGTH } from '../config/limits.js';
import { InvalidArgumentError } from '../errors/index.js';

/** Run ids, workflow and queue names: what the engine accepts. */
export const MAX_NAME = MAX_ID_LENGTH;

/** A bad admin API parameter: answered 400, naming the parameter. */
export class AdminParamError extends InvalidArgumentError {
  constructor(parameter: string, problem: string) {
    super(`Invalid parameter "${parameter}": ${problem}`, parameter);
  }
}
