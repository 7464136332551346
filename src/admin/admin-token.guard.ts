import { timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, UnauthorizedException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';

/**
 * Guards the nestjs-durable admin API (/durable): `Authorization: Bearer <ADMIN_TOKEN>` (the scheme in
 * any case, as HTTP allows). A missing or wrong token is 401 with `WWW-Authenticate: Bearer`.
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
    const [, token = ''] = /^bearer\s+(.*)$/i.exec(header.trim()) ?? [];
    const given = Buffer.from(token);
    if (given.length === this.expected.length && timingSafeEqual(given, this.expected)) return true;
    http.getResponse<{ setHeader(name: string, value: string): void }>().setHeader('WWW-Authenticate', 'Bearer realm="durable"');
    throw new UnauthorizedException('missing or wrong admin token: send Authorization: Bearer <ADMIN_TOKEN>');
  }
}
