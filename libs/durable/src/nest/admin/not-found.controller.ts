import { All, NotFoundException, Req, type Type } from '@nestjs/common';
import type { ResolvedAdminOptions } from './admin-options.js';
import { mountAdminController } from './mount.js';
import { ApiExcludeController } from './swagger.js';

/**
 * Any other path under the admin path: a 404 from the admin module itself, so that it goes through
 * the guards, the request policy and the admin error filter like every admin answer (security
 * headers, no X-Powered-By) instead of falling to the app's own not-found handler. Mounted last:
 * Nest registers routes in order, so every real endpoint and the dashboard's are matched first.
 */
export function createNotFoundController(settings: ResolvedAdminOptions): Type<unknown> {
  class DurableAdminNotFoundController {
    @All('*path')
    notFound(@Req() req: { method?: string; path?: string }): never {
      throw new NotFoundException(`The durable admin API has no ${req.method ?? ''} ${req.path ?? ''} endpoint.`);
    }
  }
  ApiExcludeController()(DurableAdminNotFoundController);
  return mountAdminController(DurableAdminNotFoundController, settings);
}
