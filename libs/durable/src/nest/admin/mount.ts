import { Controller, UseFilters, UseGuards, UseInterceptors, type Type } from '@nestjs/common';
import { AdminExceptionFilter } from './admin-exception.filter.js';
import type { ResolvedAdminOptions } from './admin-options.js';
import { ErrorDto } from './dto.js';
import { AdminRequestPolicy } from './request-policy.js';
import { requestActor } from './request-actor.js';
import { ApiExtraModels, ApiParam, ApiResponse, ApiTags } from './swagger.js';

/** OpenAPI: the error answers (ErrorDto) an endpoint can give. */
export const errors =
  (...codes: number[]) =>
  (target: object, key: string, desc: PropertyDescriptor) => {
    for (const status of codes) ApiResponse({ status, type: ErrorDto })(target, key, desc);
  };

export const STATUS_LIST = 'PENDING, RUNNING, WAITING, SUCCEEDED, FAILED, CANCELLED';
export const idParam = ApiParam({ name: 'id', description: 'Run id' });
export const queueParam = ApiParam({ name: 'queue', description: 'Queue name' });
export const scheduleParam = ApiParam({ name: 'id', description: 'Schedule id (a declared schedule: the workflow name)' });

/** What every admin controller class carries: the settings of its module definition. */
export interface AdminControllerClass<T> extends Type<T> {
  settings: ResolvedAdminOptions;
}

/** Who acts (recorded in the run's history), from the request the guards let through. */
export function actorOf(controller: object, req: unknown): string {
  return requestActor((controller.constructor as AdminControllerClass<unknown>).settings.actor, req);
}

/**
 * One admin controller for one module definition: a subclass of `base` carrying the settings,
 * mounted at the configured path, behind the guards, with the admin error filter and the request
 * policy (security headers; JSON-only, same-origin actions).
 */
export function createAdminRoute<T>(base: Type<T>, settings: ResolvedAdminOptions): Type<T> {
  const cls = class extends (base as Type<object>) {} as unknown as AdminControllerClass<T>;
  Object.defineProperty(cls, 'name', { value: `Durable${base.name}` });
  cls.settings = settings;
  return mountAdminController(cls, settings);
}

/** Mounts an admin controller class at the configured path, behind the guards, with the error filter and request policy. */
export function mountAdminController<T extends Type<unknown>>(cls: T, settings: ResolvedAdminOptions): T {
  Controller(settings.path)(cls);
  if (settings.guards.length) UseGuards(...settings.guards)(cls);
  UseFilters(AdminExceptionFilter)(cls);
  UseInterceptors(new AdminRequestPolicy({ trustProxy: settings.trustProxy }))(cls);
  ApiTags('durable')(cls);
  ApiExtraModels(ErrorDto)(cls);
  return cls;
}
