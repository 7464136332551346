import { Logger, type OnModuleInit, type Type } from '@nestjs/common';
import type { ResolvedAdminOptions } from './admin-options.js';
import { BackfillsController } from './backfills.controller.js';
import { StreamsController } from './streams.controller.js';
import { SignalsController } from './signals.controller.js';
import { BulkController } from './bulk.controller.js';
import { FlowController } from './flow.controller.js';
import { InsightsController } from './insights.controller.js';
import { LiveController } from './live.controller.js';
import { createAdminRoute } from './mount.js';
import { RunsController } from './runs.controller.js';
import { SchedulesController } from './schedules.controller.js';

/** The admin API's controllers, one per thing it serves, for one module definition (path, guards). */
export function createAdminControllers(settings: ResolvedAdminOptions): Array<Type<unknown>> {
  return [
    RunsController,
    BulkController,
    SchedulesController,
    FlowController,
    BackfillsController,
    StreamsController,
    SignalsController,
    InsightsController,
    LiveController,
  ].map((c) => createAdminRoute<unknown>(c, settings));
}

/** Says at boot where the admin API is and what protects it (a loud warning when nothing does). */
export class AdminBootLog implements OnModuleInit {
  constructor(private readonly settings: ResolvedAdminOptions) {}

  onModuleInit(): void {
    const { path, guards, unsafeNoGuard } = this.settings;
    const logger = new Logger('DurableAdmin');
    if (unsafeNoGuard) {
      logger.warn(
        `admin API at /${path} is NOT protected (unsafeNoGuard: true): anyone who reaches this app can read runs and cancel, resume or fork them. Pass admin.guards outside local development.`,
      );
    } else {
      logger.log(
        `admin API at /${path}, guarded by ${guards.map((g) => (typeof g === 'function' ? g.name : g.constructor?.name) || 'guard').join(', ')}`,
      );
    }
    if (this.settings.bulkTokenSecret === undefined) {
      logger.log(
        'bulk-action tokens are signed with a key made at boot: they do not survive a restart or work on another instance; ' +
          'set admin.bulkTokenSecret (the same on every instance) to change that.',
      );
    }
  }
}
