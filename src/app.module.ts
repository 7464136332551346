import { Module, type DynamicModule } from '@nestjs/common';
import { DurableModule } from 'nestjs-durable';
import { AdminTokenGuard } from './admin/admin-token.guard.js';
import { AssistantModule } from './assistant/assistant.module.js';
import { APP_CONFIG, appConfigFromEnv, type AppConfig } from './config/app-config.js';
import { ConfigModule } from './config/config.module.js';
import { customerContext, type CustomerContext } from './customers/customer-context.js';
import { CustomersModule } from './customers/customers.module.js';
import { OrdersModule } from './orders/orders.module.js';
import { PrismaModule } from './prisma/prisma.module.js';
import { PrismaService } from './prisma/prisma.service.js';
import { ReportsModule } from './reports/reports.module.js';
import { RefundApproval, RefundConfirmed } from './returns/refund-approval.js';
import { ReturnsModule } from './returns/returns.module.js';
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
          // Signals get an endpoint each (POST /durable/signals/<name>/:runId, behind their guards);
          // callback URLs point to POST /durable/callbacks/:token.
          signals: [RefundApproval, RefundConfirmed],
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
            // A run started in a customer's request keeps the customer, and gets it back in every step.
            // Callback URLs (Durable.callback) are signed with this secret and start with the public URL.
            callbacks: { secret: c.callbacks.secret, baseUrl: c.callbacks.publicUrl },
            context: {
              capture: () => customerContext.getStore(),
              restore: (ctx: CustomerContext, run) => customerContext.run(ctx, run),
            },
          }),
        }),
        OrdersModule,
        CustomersModule,
        ReportsModule,
        AssistantModule,
        ReturnsModule,
        TelemetryModule,
      ],
    };
  }
}
