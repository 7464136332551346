import { Inject, Injectable, Logger } from '@nestjs/common';
import { Durable, NonRetryableError, Step } from 'nestjs-durable';
import { PrismaService } from '../prisma/prisma.service.js';
import { CardDeclinedError, PaymentGateway, type Charge } from './payment-gateway.js';

/** Payment steps of the fulfilment workflow. */
@Injectable()
export class PaymentsService {
  private readonly log = new Logger('Payments');

  constructor(
    @Inject(PaymentGateway) private readonly gateway: PaymentGateway,
    @Inject(PrismaService) private readonly prisma: PrismaService,
  ) {}

  /**
   * A plain step: it talks to another system, so it cannot share our transaction and runs at
   * least once (again after a crash mid-call). The order id as idempotency key makes a repeated
   * call harmless. Gateway errors are retried with back-off; a declined card is not; an attempt
   * that takes longer than 30 s is abandoned (its signal aborts the call) and retried. Once it
   * succeeded, cancelling the order refunds it (`refund`, its compensation).
   */
  @Step({ retries: { maxAttempts: 6, initialDelayMs: 200, maxDelayMs: 5_000 }, timeoutMs: 30_000, compensate: 'refund' })
  async charge(orderId: string, amount: number, email: string): Promise<Charge> {
    this.log.log(`charging order ${orderId}: ${amount} cents`);
    try {
      return await this.gateway.charge(
        { idempotencyKey: `order-${orderId}`, amount, email },
        Durable.inWorkflow() ? Durable.signal() : undefined,
      );
    } catch (err) {
      if (err instanceof CardDeclinedError) throw new NonRetryableError(err.message);
      throw err;
    }
  }

  /**
   * The compensation of `charge` (called with its arguments and the charge): pays it back. A plain
   * step like charge, so at least once; the refund's own idempotency key makes that harmless.
   * A shipped order is never refunded (its shipment is the saga's pivot, so this is a second line of
   * defence): the refund then records `{ refundId: null }`.
   */
  @Step({ retries: { maxAttempts: 10, initialDelayMs: 500, maxDelayMs: 30_000 }, timeoutMs: 30_000 })
  async refund(orderId: string, _amount: number, _email: string, charge: Charge): Promise<{ refundId: string | null }> {
    const order = await this.prisma.order.findUnique({ where: { id: orderId }, select: { status: true } });
    if (order?.status === 'SHIPPED') {
      this.log.warn(`not refunding order ${orderId}: it has shipped`);
      return { refundId: null };
    }
    this.log.log(`refunding order ${orderId}: ${charge.amount} cents of ${charge.chargeId}`);
    return this.gateway.refund({ idempotencyKey: `refund-${orderId}`, chargeId: charge.chargeId, amount: charge.amount }, Durable.signal());
  }
}
