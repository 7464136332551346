import {
  BadRequestException,
  ConflictException,
  GoneException,
  HttpException,
  InternalServerErrorException,
  NotFoundException,
} from '@nestjs/common';
import { CallbackRefusedError, DurableError } from '../errors/index.js';

/**
 * The HTTP answer of a DurableError met by one of the module's endpoints (signals, callbacks):
 * what the sender did wrong as 4xx with the error's message and code, anything else unchanged
 * (Nest's exception handling makes it a 500 and logs it).
 */
export function httpErrorOf(err: unknown): unknown {
  if (err instanceof HttpException || !(err instanceof DurableError)) return err;
  const body = (status: number) => ({ statusCode: status, code: err.code, message: err.message });
  if (err instanceof CallbackRefusedError) {
    if (err.reason === 'invalid') return new NotFoundException(body(404));
    if (err.reason === 'used') return new ConflictException(body(409));
    return new GoneException(body(410));
  }
  switch (err.code) {
    case 'INVALID_ARGUMENT':
    case 'SERIALIZATION':
    case 'PAYLOAD_TOO_LARGE':
      return new BadRequestException(body(400));
    case 'RUN_NOT_FOUND':
      return new NotFoundException(body(404));
    case 'ILLEGAL_TRANSITION':
    case 'SIGNAL_NOT_TAKEN':
      return new ConflictException(body(409));
    case 'INVALID_OPTIONS':
      return new InternalServerErrorException(body(500));
    default:
      return err;
  }
}
