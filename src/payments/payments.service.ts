import { Inject, Injectable, Logger } from '@nestjs/common';
import { Durable, NonRetryableError, Step } from 'nestjs-durable';
import { CardDeclinedError, PaymentGateway, type Charge } from './payment-gateway.js';

/** Payment steps of the fulfilment workflow. */
@Injectable()
export class PaymentsService {
  private readonly log = new Logger('Payments');

  constructor(@Inject(PaymentGateway) private readonly gateway: PaymentGateway) {}

  /**
   * A plain step: it talks to another system, so it cannot share our transaction and runs at
   * least once (again after a crash mid-call). The order id as idempotency key makes a repeated
   * call harmless. Gateway errors are retried with back-off; a declined card is not.
   */
  @Step({ retries: { maxAttempts: 6, initialDelayMs: 200, maxDelayMs: 5_000 } })
  async charge(orderId: string, amount: number, email: string): Promise<Charge> {
    this.log.log(`charging order ${orderId}: ${amount} cents`);
    try {
      return await this.gateway.charge({ idempotencyKey: `order-${orderId}`, amount, email }, Durable.inWorkflow() ? Durable.signal() : undefined);
    } catch (err) {
      if (err instanceof CardDeclinedError) throw new NonRetryableError(err.message);
      throw err;
    }
  }
}
