import { timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';

/**
 * Guards the nestjs-durable admin API (/durable): `Authorization: Bearer <ADMIN_TOKEN>` (the scheme
 * in any case). Without it, or with another token: 401 with `WWW-Authenticate: Bearer`.
 * A stand-in for the app's real auth (session, JWT, roles); the dashboard page asks for the token.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly expected: Buffer;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.expected = Buffer.from(config.adminToken);
  }

  canActivate(context: ExecutionContext): boolean {
    const http = context.switchToHttp();
    const header = http.getRequest<{ headers: Record<string, string | undefined> }>().headers.authorization ?? '';
    const m = /^bearer[ \t]+(\S+)\s*$/i.exec(header);
    const given = Buffer.from(m?.[1] ?? '');
    if (given.length === this.expected.length && timingSafeEqual(given, this.expected)) return true;
    http.getResponse<{ setHeader(name: string, value: string): void }>().setHeader('WWW-Authenticate', 'Bearer realm="durable admin"');
    throw new UnauthorizedException(m ? 'Wrong admin token.' : 'Admin token required: send Authorization: Bearer <ADMIN_TOKEN>.');
  }
}
