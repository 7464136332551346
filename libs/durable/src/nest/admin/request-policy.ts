import {
  ForbiddenException,
  UnsupportedMediaTypeException,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import type { Observable } from 'rxjs';

/** Headers on every admin response (API, errors and dashboard): never cached, never sniffed. */
export const ADMIN_RESPONSE_HEADERS: Record<string, string> = {
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

interface HttpRequest {
  method?: string;
  headers?: Record<string, string | string[] | undefined>;
}

interface HttpResponse {
  setHeader?(name: string, value: string): unknown;
  header?(name: string, value: string): unknown;
  removeHeader?(name: string): unknown;
}

/**
 * Sets the admin headers on an Express or Fastify response (or a raw Node one) and drops Express's
 * X-Powered-By. `extra` adds headers (a content type, a page's CSP) but never weakens the admin
 * ones: every admin answer is no-store and nosniff, whatever the caller passes.
 */
export function applyAdminHeaders(res: unknown, extra: Record<string, string> = {}): void {
  const r = res as HttpResponse;
  for (const [k, v] of Object.entries({ ...extra, ...ADMIN_RESPONSE_HEADERS })) {
    if (typeof r.setHeader === 'function') r.setHeader(k, v);
    else r.header?.(k, v);
  }
  if (typeof r.removeHeader === 'function') r.removeHeader('X-Powered-By');
}

const header = (req: HttpRequest, name: string): string | undefined => {
  const v = req.headers?.[name];
  return Array.isArray(v) ? v[0] : v;
};

/**
 * Why a state-changing admin request is refused, or null. Browsers send a cross-site form or
 * `fetch` without a preflight only with a "simple" content type (form-encoded, multipart,
 * text/plain), so a body must be JSON; and a request a browser marks as cross-site
 * (`Sec-Fetch-Site`), or without it whose `Origin` is not this host, is refused, so a cookie-authenticated
 * dashboard session cannot be used by another site (with `trustProxy`, an Origin equal to the
 * X-Forwarded-Host the proxy set counts as this host too). Requests from scripts and curl (no
 * Origin, no Sec-Fetch-Site) pass; a body-less POST may omit Content-Type.
 */
export function crossSiteRefusal(req: HttpRequest, opts: { trustProxy?: boolean } = {}): { status: 403 | 415; message: string } | null {
  // A browser that sends Sec-Fetch-Site says where the request comes from: trust it (a proxy may
  // rewrite Host, not this); older browsers are judged by Origin against the host.
  const site = header(req, 'sec-fetch-site');
  if (site && site !== 'same-origin' && site !== 'none') {
    return {
      status: 403,
      message: `Cross-site request refused (Sec-Fetch-Site: ${site}): the admin API accepts actions from its own origin only.`,
    };
  }
  const origin = header(req, 'origin');
  if (origin && !site) {
    let host: string | null = null;
    try {
      host = new URL(origin).host;
    } catch {
      host = null;
    }
    // X-Forwarded-Host is any client's to set: it names this host only behind a proxy the app trusts (admin.trustProxy).
    const forwarded = opts.trustProxy ? header(req, 'x-forwarded-host')?.split(',')[0]?.trim() : undefined;
    if (!host || (host !== header(req, 'host') && host !== forwarded)) {
      return {
        status: 403,
        message: `Cross-site request refused (Origin: ${origin.slice(0, 100)}): the admin API accepts actions from its own origin only.`,
      };
    }
  }
  const type = header(req, 'content-type');
  const length = Number(header(req, 'content-length') ?? 0);
  if ((type !== undefined || length > 0 || header(req, 'transfer-encoding')) && !/^application\/json\s*(;|$)/i.test(type ?? '')) {
    return {
      status: 415,
      message: `The admin API takes JSON bodies only: send Content-Type: application/json (got ${JSON.stringify(type ?? 'none')}).`,
    };
  }
  return null;
}

/**
 * Every admin route: the security headers, and for anything but GET/HEAD the cross-site checks
 * (see crossSiteRefusal). Runs after the guards; errors (guards' too) get the headers from the
 * admin exception filter.
 */
export class AdminRequestPolicy implements NestInterceptor {
  constructor(private readonly opts: { trustProxy?: boolean } = {}) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const http = context.switchToHttp();
    applyAdminHeaders(http.getResponse());
    const req = http.getRequest<HttpRequest>();
    const method = (req.method ?? 'GET').toUpperCase();
    if (method !== 'GET' && method !== 'HEAD') {
      const refusal = crossSiteRefusal(req, this.opts);
      if (refusal)
        throw refusal.status === 403 ? new ForbiddenException(refusal.message) : new UnsupportedMediaTypeException(refusal.message);
    }
    return next.handle();
  }
}
