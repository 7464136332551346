import { Module } from '@nestjs/common';
import { OutboxModule } from '../outbox/outbox.module.js';
import { PaymentsModule } from '../payments/payments.module.js';
import { StockModule } from '../stock/stock.module.js';
import { FulfilmentWorkflow } from './fulfilment.workflow.js';
import { OrderSteps } from './order-steps.js';
import { MaintenanceController } from './maintenance.controller.js';
import { OrdersController } from './orders.controller.js';
import { OrdersService } from './orders.service.js';
import { RecomputeTotalsBackfill } from './recompute-totals.backfill.js';
import { UnpaidOrdersJob } from './unpaid-orders.job.js';

@Module({
  imports: [StockModule, PaymentsModule, OutboxModule],
  controllers: [OrdersController, MaintenanceController],
  providers: [OrdersService, OrderSteps, FulfilmentWorkflow, UnpaidOrdersJob, RecomputeTotalsBackfill],
})
export class OrdersModule {}
