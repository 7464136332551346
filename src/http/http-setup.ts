import type { INestApplication } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Bodies the shop (and the admin API under it) accepts: JSON only. */
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** True when the request carries a body (a length above 0, or a chunked one). */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/**
 * The example's HTTP defaults, applied by main.ts and by the tests to the same app:
 * - no `X-Powered-By`, and `nosniff`, `DENY` framing and no referrer on every answer;
 * - a request body must be JSON (415 otherwise): form-encoded or text bodies are refused before
 *   any route sees them, so a cross-site HTML form cannot post to the shop.
 * The app must be created with `{ rawBody: true }`: the shipment webhook checks its signature
 * over the exact bytes it received.
 */
export function configureHttp(app: INestApplication): void {
  const express = app.getHttpAdapter().getInstance() as { disable(setting: string): void };
  express.disable('x-powered-by');
  app.use((req: IncomingMessage, res: ServerResponse, next: () => void) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'no-referrer');
    if (hasBody(req) && !JSON_TYPE.test(req.headers['content-type'] ?? '')) {
      res.statusCode = 415;
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      res.end(
        JSON.stringify({
          statusCode: 415,
          message: ['send the body as JSON (content-type: application/json)'],
          error: 'Unsupported Media Type',
        }),
      );
      return;
    }
    next();
  });
}
