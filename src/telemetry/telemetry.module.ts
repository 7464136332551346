import { Module, type MiddlewareConsumer, type NestModule } from '@nestjs/common';
import { httpSpans } from './otel.js';
import { TelemetryController } from './telemetry.controller.js';

/** The example's telemetry routes, and a span per HTTP request (the parent of the runs it starts). */
@Module({ controllers: [TelemetryController] })
export class TelemetryModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(httpSpans).forRoutes('*path');
  }
}
