import { BadRequestException } from '@nestjs/common';

/** Run ids, workflow and queue names: what the engine accepts (at most 256 characters). */
export const MAX_NAME = 256;

/** 400 naming the parameter at fault. */
export class AdminParamError extends BadRequestException {
  constructor(parameter: string, problem: string) {
    super({ statusCode: 400, error: 'Bad Request', message: `Invalid parameter "${parameter}": ${problem}`, parameter });
  }
}
