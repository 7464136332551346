import type { DynamicModule } from '@nestjs/common';
import { resolveAdminOptions, type DurableAdminOptions } from './admin-options.js';
import { AdminBootLog, createAdminControllers } from './admin.controller.js';
import { AdminService } from '../../admin/admin-service.js';
import { DurableRuntime } from '../durable-runtime.js';
import { DURABLE_ENDPOINTS, type DurableEndpointOptions } from '../module-definition.js';
import { StatementGate } from './statement-gate.js';
import { createDashboardController } from './dashboard.controller.js';
import { createNotFoundController } from './not-found.controller.js';
import { loadSwagger } from './swagger.js';
import { createMalformedPathModule } from './malformed-path.middleware.js';

/**
 * Adds the admin API (and dashboard) to DurableModule's definition when `admin` is set.
 * Throws at boot when it would be unguarded without the explicit opt-in.
 */
export function withAdmin(definition: DynamicModule, admin: DurableAdminOptions | false | null | undefined): DynamicModule {
  if (admin === undefined || admin === null || admin === false) return definition;
  const settings = resolveAdminOptions(admin);
  void loadSwagger();
  const controllers = [
    ...createAdminControllers(settings),
    ...(settings.dashboard ? [createDashboardController(settings.path)] : []),
    createNotFoundController(settings), // last: it answers what none of the others does
  ];
  return {
    ...definition,
    imports: [...(definition.imports ?? []), createMalformedPathModule(settings.path)],
    controllers: [...(definition.controllers ?? []), ...controllers],
    providers: [
      ...(definition.providers ?? []),
      { provide: AdminBootLog, useFactory: () => new AdminBootLog(settings) },
      {
        provide: AdminService,
        inject: [DurableRuntime, { token: DURABLE_ENDPOINTS, optional: true }],
        // At most a few admin statements at a time on the engine's pool (see StatementGate).
        useFactory: (runtime: DurableRuntime, endpoints?: Required<DurableEndpointOptions>) => {
          const gate = new StatementGate();
          return new AdminService(
            () => runtime.engine,
            (sql) => gate.wrap(sql),
            {
              bulkTokenSecret: settings.bulkTokenSecret,
              readReplicaUrl: settings.readReplicaUrl,
              signalPath: endpoints?.signalPath,
              adminPath: settings.path,
            },
          );
        },
      },
    ],
  };
}
