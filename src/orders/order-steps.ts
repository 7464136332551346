import { Inject, Injectable } from '@nestjs/common';
import { Durable, Step } from 'nestjs-durable';
import type { Prisma } from '../generated/prisma/client.js';
import { OutboxService } from '../outbox/outbox.service.js';

const WAREHOUSE = 'warehouse@example.com';

/**
 * Order state changes of the fulfilment workflow. Each is a transactional step: the status
 * update, its email in the outbox and the step's checkpoint commit together, exactly once.
 */
@Injectable()
export class OrderSteps {
  constructor(@Inject(OutboxService) private readonly outbox: OutboxService) {}

  @Step({ transactional: true })
  async markPaid(orderId: string, email: string, chargeId: string): Promise<void> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    await tx.order.update({ where: { id: orderId }, data: { status: 'PAID', chargeId } });
    await this.outbox.enqueue(tx, { orderId, kind: 'order-confirmed', to: email, subject: `Order ${orderId} confirmed` });
  }

  @Step({ transactional: true })
  async markRejected(orderId: string, email: string, reason: string): Promise<void> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    await tx.order.update({ where: { id: orderId }, data: { status: 'REJECTED', failureReason: reason } });
    await this.outbox.enqueue(tx, { orderId, kind: 'out-of-stock', to: email, subject: `Order ${orderId}: ${reason}` });
  }

  @Step({ transactional: true })
  async markPaymentFailed(orderId: string, email: string, reason: string): Promise<void> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    await tx.order.update({ where: { id: orderId }, data: { status: 'PAYMENT_FAILED', failureReason: reason } });
    await this.outbox.enqueue(tx, { orderId, kind: 'payment-failed', to: email, subject: `Order ${orderId}: payment failed` });
  }

  /** No shipment yet: nudge the warehouse (once). */
  @Step({ transactional: true })
  async remindWarehouse(orderId: string): Promise<void> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    await this.outbox.enqueue(tx, {
      orderId,
      kind: 'shipment-overdue',
      to: WAREHOUSE,
      subject: `Order ${orderId} is paid but not shipped yet`,
    });
  }

  @Step({ transactional: true })
  async markNotShipped(orderId: string, email: string, reason: string): Promise<void> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    await tx.order.update({ where: { id: orderId }, data: { status: 'NOT_SHIPPED', failureReason: reason } });
    await this.outbox.enqueue(tx, { orderId, kind: 'not-shipped', to: email, subject: `Order ${orderId} could not be shipped: refunded` });
  }

  /**
   * The pivot of the fulfilment saga: once the order is marked shipped (this step's checkpoint
   * committed), cancelling with compensation is refused (PivotPassedError) instead of refunding a
   * parcel that is on its way. A compensating cancel accepted first makes this transaction roll back.
   */
  @Step({ transactional: true, pivot: true })
  async markShipped(orderId: string, email: string, trackingNumber: string): Promise<void> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    await tx.order.update({ where: { id: orderId }, data: { status: 'SHIPPED', trackingNumber } });
    await this.outbox.enqueue(tx, { orderId, kind: 'order-shipped', to: email, subject: `Order ${orderId} shipped: ${trackingNumber}` });
  }

  @Step({ transactional: true })
  async requestReview(orderId: string, email: string): Promise<void> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    await this.outbox.enqueue(tx, { orderId, kind: 'review-request', to: email, subject: `How do you like order ${orderId}?` });
  }
}
