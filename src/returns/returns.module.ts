import { Module } from '@nestjs/common';
import { OutboxModule } from '../outbox/outbox.module.js';
import { OrderReturnWorkflow, ReturnSteps } from './order-return.workflow.js';
import { RefundApproverGuard } from './refund-approval.js';
import { RefundProvider } from './refund-provider.js';
import { ReturnsController } from './returns.controller.js';

/** Returns of shipped orders: an approval above a limit (a signal), a refund confirmed through a callback URL. */
@Module({
  imports: [OutboxModule],
  controllers: [ReturnsController],
  providers: [OrderReturnWorkflow, ReturnSteps, RefundProvider, RefundApproverGuard],
})
export class ReturnsModule {}
