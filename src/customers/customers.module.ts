import { Module, type MiddlewareConsumer, type NestModule } from '@nestjs/common';
import { CustomerContextMiddleware } from './customer-context.js';
import { CustomersController } from './customers.controller.js';
import { CustomerSummarySteps, CustomerSummaryWorkflow } from './customer-summary.workflow.js';

/** The customer's own views: a tenant-aware workflow that keeps the request's customer (module option `context`). */
@Module({ controllers: [CustomersController], providers: [CustomerSummarySteps, CustomerSummaryWorkflow] })
export class CustomersModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(CustomerContextMiddleware).forRoutes(CustomersController);
  }
}
