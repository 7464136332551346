import { Inject, Module, type NestModule, type Type } from '@nestjs/common';
import { ApplicationConfig, HttpAdapterHost } from '@nestjs/core';
import { applyAdminHeaders } from './request-policy.js';

interface RawRequest {
  originalUrl?: string;
  url?: string;
}

interface RawResponse {
  statusCode: number;
  headersSent?: boolean;
  setHeader(name: string, value: string): unknown;
  end(body: string): unknown;
}

/** Whether the path of `url` is valid percent-encoded UTF-8 (the query string is the parser's business). */
export function decodablePath(url: string): boolean {
  const path = url.split('?')[0];
  try {
    decodeURIComponent(path);
    return true;
  } catch {
    return false;
  }
}

/** Whether `url`'s path is `base` or under it (compared as raw text: `base` has only unreserved characters). */
export function underPath(url: string, base: string): boolean {
  const path = url.split('?')[0].replace(/\/{2,}/g, '/');
  return path === base || path.startsWith(`${base}/`);
}

/**
 * Answers a request under the admin path whose path is not valid percent-encoding (e.g. `%FF`)
 * with the admin module's 400 and headers. The router would otherwise fail to decode its route
 * parameters before any admin guard, filter or header applies, and answer with the framework's
 * error (X-Powered-By, no no-store/nosniff). Nothing else is checked here: the guards still decide
 * who gets a well-formed path. Mounted for every request (the router cannot match a path it cannot
 * decode), it lets through at once whatever is not under `base`.
 */
export function malformedPathMiddleware(base: string) {
  return (req: RawRequest, res: RawResponse, next: () => void): void => {
    const url = String(req.originalUrl ?? req.url ?? '');
    if (!underPath(url, base) || decodablePath(url)) return next();
    applyAdminHeaders(res, { 'Content-Type': 'application/json; charset=utf-8' });
    res.statusCode = 400;
    res.end(
      JSON.stringify({
        statusCode: 400,
        error: 'Bad Request',
        message: 'The URL path is not valid percent-encoding (e.g. %FF): encode it as UTF-8 (encodeURIComponent).',
      }),
    );
  };
}

/**
 * The module that puts malformedPathMiddleware in front of the admin path (one per module
 * definition: the path is the configured one, under the app's global prefix). It is mounted on the
 * HTTP server itself, before the routes: a route middleware of Nest would be matched by the same
 * router that cannot decode the path.
 */
export function createMalformedPathModule(path: string): Type<NestModule> {
  @Module({})
  class DurableAdminPathModule implements NestModule {
    constructor(
      @Inject(ApplicationConfig) private readonly app: ApplicationConfig,
      @Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost,
    ) {}

    configure(): void {
      const prefix = this.app.getGlobalPrefix().replace(/^\/+|\/+$/g, '');
      const base = `/${prefix ? `${prefix}/` : ''}${path}`;
      this.adapterHost.httpAdapter?.use(malformedPathMiddleware(base));
    }
  }
  return DurableAdminPathModule;
}
