import { Module, type DynamicModule } from '@nestjs/common';
import { DurableModule } from 'nestjs-durable';
import { AdminTokenGuard } from './admin/admin-token.guard.js';
import { APP_CONFIG, appConfigFromEnv, type AppConfig } from './config/app-config.js';
import { ConfigModule } from './config/config.module.js';
import { OrdersModule } from './orders/orders.module.js';
import { PrismaModule } from './prisma/prisma.module.js';
import { PrismaService } from './prisma/prisma.service.js';
import { ReportsModule } from './reports/reports.module.js';
import { TelemetryModule } from './telemetry/telemetry.module.js';

/** The example shop. `AppModule.forRoot()` reads the environment; tests pass their own config. */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig = appConfigFromEnv()): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        PrismaModule,
        DurableModule.forRootAsync({
          // Admin API + dashboard at /durable, behind the app's guard (static: it decides the routes).
          admin: { path: 'durable', guards: [AdminTokenGuard] },
          inject: [APP_CONFIG],
          useFactory: (c: AppConfig) => ({
            prisma: PrismaService,
            connection: c.databaseUrl,
            poolSize: c.durable.poolSize,
            concurrency: c.durable.concurrency,
            leaseMs: c.durable.leaseMs,
            heartbeatMs: c.durable.heartbeatMs,
            pollIntervalMs: c.durable.pollIntervalMs,
            sweepIntervalMs: c.durable.sweepIntervalMs,
            shutdownGraceMs: c.durable.shutdownGraceMs,
          }),
        }),
        OrdersModule,
        ReportsModule,
        TelemetryModule,
      ],
    };
  }
}
