import { timingSafeEqual } from 'node:crypto';
import { Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';

/**
 * Guards the nestjs-durable admin API (/durable): `Authorization: Bearer <ADMIN_TOKEN>`.
 * A stand-in for the app's real auth (session, JWT, roles); the dashboard page asks for the token.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly expected: Buffer;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.expected = Buffer.from(`Bearer ${config.adminToken}`);
  }

  canActivate(context: ExecutionContext): boolean {
    const header = context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers.authorization ?? '';
    const given = Buffer.from(header);
    return given.length === this.expected.length && timingSafeEqual(given, this.expected);
  }
}
