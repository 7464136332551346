import { Inject, Injectable } from '@nestjs/common';
import { Durable, Workflow } from 'nestjs-durable';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { PaymentsService } from '../payments/payments.service.js';
import { StockService } from '../stock/stock.service.js';
import type { FulfilOrderInput, FulfilOrderResult, Shipment } from './fulfilment.types.js';
import { OrderSteps } from './order-steps.js';

/**
 * What happens after an order is placed. The body only orchestrates: every side effect is a
 * @Step (checkpointed; replayed, not re-run, after a crash), and waits go through Durable, so
 * the body must be deterministic. Undoing is declared on the steps (`compensate`): the stock
 * reservation is released and the charge refunded when the order is cancelled
 * (POST /orders/:id/cancel → cancel(id, { compensate: true })) or the payment fails.
 */
@Injectable()
export class FulfilmentWorkflow {
  constructor(
    @Inject(StockService) private readonly stock: StockService,
    @Inject(PaymentsService) private readonly payments: PaymentsService,
    @Inject(OrderSteps) private readonly orders: OrderSteps,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Workflow({ name: 'fulfilOrder' })
  async fulfilOrder(input: FulfilOrderInput): Promise<FulfilOrderResult> {
    const { orderId, email, sku, quantity, amount } = input;

    // 1. Reserve stock (transactional step: exactly once).
    if (!(await this.stock.reserve(orderId, sku, quantity))) {
      await this.orders.markRejected(orderId, email, 'out of stock');
      return { outcome: 'REJECTED', reason: 'out of stock' };
    }

    // 2. Charge (plain step with retries and a timeout: slow, flaky, idempotent by key).
    let chargeId: string;
    try {
      chargeId = (await this.payments.charge(orderId, amount, email)).chargeId;
    } catch (err) {
      // Retries exhausted or card declined: record the outcome, then undo the reservation
      // (Durable.compensate() runs the compensations of the steps done so far: release).
      const reason = err instanceof Error ? err.message : String(err);
      await this.orders.markPaymentFailed(orderId, email, reason);
      await Durable.compensate();
      return { outcome: 'PAYMENT_FAILED', reason };
    }

    // 3. Paid: status + confirmation email in one transaction.
    await this.orders.markPaid(orderId, email, chargeId);

    // 4. Wait for the carrier's webhook (POST /orders/:id/shipment → WorkflowClient.send). The
    //    run suspends (status WAITING: no worker slot, no connection) and wakes when it arrives.
    let shipment = await Durable.recv<Shipment>('shipment', { timeoutMs: this.config.fulfilment.shipmentReminderMs });
    if (!shipment) {
      await this.orders.remindWarehouse(orderId);
      const { shipmentTimeoutMs, shipmentReminderMs } = this.config.fulfilment;
      shipment = await Durable.recv<Shipment>('shipment', { timeoutMs: Math.max(0, shipmentTimeoutMs - shipmentReminderMs) });
      if (!shipment) {
        // A week without a shipment: give up, tell the customer, refund the charge and release the stock.
        const reason = 'not shipped within the shipment timeout';
        await this.orders.markNotShipped(orderId, email, reason);
        await Durable.compensate();
        return { outcome: 'NOT_SHIPPED', reason };
      }
    }
    await this.orders.markShipped(orderId, email, shipment.trackingNumber);

    // 5. Later, ask for a review: a durable sleep survives restarts and deploys.
    await Durable.sleep(this.config.fulfilment.reviewRequestDelayMs);
    await this.orders.requestReview(orderId, email);

    return { outcome: 'SHIPPED', chargeId, trackingNumber: shipment.trackingNumber };
  }
}
