import { Catch, HttpException, Inject, Logger, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { describeThrown, normalizeThrown } from '../../errors/describe-thrown.js';
import { DurableError, InvalidArgumentError } from '../../errors/index.js';
import { BulkTokenError } from '../../admin/bulk-token.js';
import { applyAdminHeaders } from './request-policy.js';

/** HTTP status of each DurableError code the admin API can meet. */
const STATUS_OF_CODE: Record<string, number> = {
  RUN_NOT_FOUND: 404,
  ILLEGAL_TRANSITION: 409,
  UNKNOWN_WORKFLOW: 409,
  IDEMPOTENCY_CONFLICT: 409,
  INVALID_ARGUMENT: 400,
  SERIALIZATION: 400,
  PAYLOAD_TOO_LARGE: 413,
  NOT_READY: 503,
  NO_PRIMARY: 503,
  SCHEDULE_NOT_FOUND: 404,
  SCHEDULE_CONFLICT: 409,
  INVALID_SCHEDULE: 409,
  KEY_CONFLICT: 409,
  PIVOT_PASSED: 409,
  UNDONE_STEPS: 409,
};

/** Seconds a client should wait before retrying a 429 (busy) or a 503 (database away, live connections full). */
const RETRY_AFTER: Record<number, string> = { 429: '1', 503: '5' };

const REASON: Record<number, string> = {
  400: 'Bad Request',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/**
 * Errors of the admin endpoints as JSON: HttpExceptions (guards, validation) unchanged,
 * DurableErrors by code (404 unknown run, 409 illegal transition, …), a database that is
 * unreachable or overloaded → 503, and only a genuine bug → 500 (logged with its stack).
 */
@Catch()
export class AdminExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('DurableAdmin');

  constructor(@Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost) {}

  catch(thrown: unknown, host: ArgumentsHost): void {
    // A guard or pipe of the app may throw anything (a revoked Proxy, on which even instanceof throws).
    const err = normalizeThrown(thrown);
    const { httpAdapter } = this.adapterHost;
    const res = host.switchToHttp().getResponse();
    applyAdminHeaders(res);
    if (err instanceof HttpException) {
      const body = err.getResponse();
      retryAfter(res, err.getStatus());
      httpAdapter.reply(res, typeof body === 'string' ? { statusCode: err.getStatus(), message: body } : body, err.getStatus());
      return;
    }
    let status = 500;
    let message = 'Internal error in the durable admin API (logged on the server).';
    let code: string | undefined;
    const parameter = err instanceof InvalidArgumentError ? err.parameter : undefined;
    if (err instanceof DurableError) {
      code = err.code;
      status = err instanceof BulkTokenError ? err.status : (STATUS_OF_CODE[err.code] ?? 500);
      message = err.message;
    } else {
      const pgCode = (err as { code?: unknown } | null)?.code;
      if (typeof pgCode === 'string' && /^(08|53|57)/.test(pgCode)) {
        status = 503;
        message = 'The database is unavailable or overloaded; try again.';
      } else if (typeof pgCode === 'string' && pgCode.startsWith('22')) {
        status = 400;
        message = `The database rejected a parameter value (${pgCode}).`;
      } else if (
        /ECONNREFUSED|ECONNRESET|timeout exceeded when trying to connect|Connection terminated/i.test(String((err as Error)?.message))
      ) {
        status = 503;
        message = 'The database is unreachable; try again.';
      }
    }
    retryAfter(res, status);
    if (status >= 500) {
      const stack = (err as { stack?: unknown } | null)?.stack;
      this.logger.error(`${message} ${typeof stack === 'string' ? stack : describeThrown(err)}`);
    }
    httpAdapter.reply(
      res,
      {
        statusCode: status,
        error: REASON[status] ?? 'Error',
        message,
        ...(code ? { code } : {}),
        ...(parameter ? { parameter } : {}),
        ...(err instanceof BulkTokenError ? { reason: err.reason } : {}),
      },
      status,
    );
  }
}

/** Retry-After on every 429 and 503 (unless whoever refused set one already). */
function retryAfter(res: unknown, status: number): void {
  const value = RETRY_AFTER[status];
  const r = res as { getHeader?(n: string): unknown; setHeader?(n: string, v: string): unknown; header?(n: string, v: string): unknown };
  if (!value || r.getHeader?.('Retry-After') !== undefined) return;
  if (typeof r.setHeader === 'function') r.setHeader('Retry-After', value);
  else r.header?.('Retry-After', value);
}
