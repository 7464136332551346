import {
  BadRequestException,
  Body,
  ConflictException,
  Controller,
  Get,
  HttpCode,
  Inject,
  NotFoundException,
  Param,
  Post,
  UseGuards,
} from '@nestjs/common';
import { AdminTokenGuard } from '../admin/admin-token.guard.js';
import { WorkflowClient } from 'nestjs-durable';
import { PrismaService } from '../prisma/prisma.service.js';
import { parseOrderId } from '../orders/create-order.dto.js';
import type { ReturnInput } from './order-return.workflow.js';
import { RefundProvider } from './refund-provider.js';

@Controller()
export class ReturnsController {
  constructor(
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(WorkflowClient) private readonly workflows: WorkflowClient,
    @Inject(RefundProvider) private readonly provider: RefundProvider,
  ) {}

  /**
   * POST /orders/:id/return { reason } → 202 { runId }: a shipped order goes back; its refund runs
   * as the workflow orderReturn, started in the transaction that marks the order RETURN_REQUESTED
   * (both or neither). 409 unless the order has shipped.
   */
  @Post('orders/:id/return')
  @HttpCode(202)
  async requestReturn(@Param('id') id: string, @Body() body: unknown) {
    const orderId = parseOrderId(id);
    const reason = (body as { reason?: unknown } | null)?.reason;
    if (typeof reason !== 'string' || !reason.trim() || reason.length > 500)
      throw new BadRequestException('send { "reason": "…" } (1 to 500 characters)');
    const fulfilment = await this.workflows.getRun(orderId);
    const chargeId = (fulfilment?.output as { chargeId?: string } | undefined)?.chargeId;
    return this.prisma.$transaction(async (tx) => {
      const order = await tx.order.findUnique({ where: { id: orderId } });
      if (!order) throw new NotFoundException(`no order ${orderId}`);
      if (order.status !== 'SHIPPED' || !chargeId)
        throw new ConflictException(`order ${orderId} is ${order.status}: only a shipped order can be returned`);
      await tx.order.update({ where: { id: orderId }, data: { status: 'RETURN_REQUESTED' } });
      const input: ReturnInput = { orderId, email: order.email, chargeId, amount: order.amount, reason };
      const run = await this.workflows.start('orderReturn', input, { tx, id: `return:${orderId}` });
      // One return per order: a second request finds the first run (and rolls this transaction back).
      if (run.outcome === 'existing') throw new ConflictException(`order ${orderId} was returned already (run ${run.id})`);
      return { runId: run.id };
    });
  }

  /**
   * GET /fake-provider/refunds (admin token): the refunds the fake provider accepted, with the URLs
   * it confirms to — secrets, hence the guard (play the provider: POST { refundId, status: "refunded" } there).
   */
  @Get('fake-provider/refunds')
  @UseGuards(AdminTokenGuard)
  pendingRefunds() {
    return this.provider.pending();
  }
}
