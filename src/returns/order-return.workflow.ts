import { Inject, Injectable, Logger } from '@nestjs/common';
import { CallbackTimeoutError, Durable, Step, Workflow } from 'nestjs-durable';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import type { Prisma } from '../generated/prisma/client.js';
import { OutboxService } from '../outbox/outbox.service.js';
import { RefundApproval, RefundConfirmed } from './refund-approval.js';
import { RefundProvider } from './refund-provider.js';

export interface ReturnInput {
  orderId: string;
  email: string;
  chargeId: string;
  amount: number;
  reason: string;
}

export type ReturnOutcome =
  | { outcome: 'REFUNDED'; refundId: string; approvedBy: 'limit' | 'approver' }
  | { outcome: 'DECLINED'; note: string | null }
  | { outcome: 'REFUND_FAILED' | 'REFUND_UNCONFIRMED'; refundId: string | null };

const DAY = 24 * 3600_000;

@Injectable()
export class ReturnSteps {
  private readonly log = new Logger('Returns');

  constructor(
    @Inject(RefundProvider) private readonly provider: RefundProvider,
    @Inject(OutboxService) private readonly outbox: OutboxService,
  ) {}

  /** Hands the refund to the provider with the URL it confirms to (idempotent by key: a retry asks once). */
  @Step({ retries: { maxAttempts: 5, initialDelayMs: 200 } })
  async requestRefund(orderId: string, chargeId: string, amount: number, callbackUrl: string): Promise<string> {
    return this.provider.requestRefund({ idempotencyKey: `return-${orderId}`, chargeId, amount, callbackUrl }).refundId;
  }

  @Step({ transactional: true })
  async markReturned(orderId: string, email: string, refundId: string): Promise<void> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    await tx.order.update({ where: { id: orderId }, data: { status: 'RETURNED' } });
    await this.outbox.enqueue(tx, { orderId, kind: 'return-refunded', to: email, subject: `Order ${orderId}: refunded (${refundId})` });
  }

  /** The refund did not go through: the order waits for a person (RETURN_FAILED), not in RETURN_REQUESTED for good. */
  @Step({ transactional: true })
  async markReturnFailed(orderId: string, why: string): Promise<void> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    await tx.order.update({ where: { id: orderId }, data: { status: 'RETURN_FAILED' } });
    this.log.warn(`order ${orderId}: return failed (${why})`);
  }

  @Step({ transactional: true })
  async markReturnDeclined(orderId: string, email: string, why: string): Promise<void> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    await tx.order.update({ where: { id: orderId }, data: { status: 'SHIPPED' } });
    await this.outbox.enqueue(tx, { orderId, kind: 'return-declined', to: email, subject: `Order ${orderId}: return declined (${why})` });
  }
}

/**
 * The return of a shipped order: a refund above the approval limit waits for an approver's
 * decision (the signal refund.approval, sent from the app's endpoint behind its guard or from the
 * dashboard); the refund is handed to an asynchronous provider with a callback URL, and the run
 * resumes when the provider POSTs its confirmation there — on whichever instance, after any crash.
 */
@Injectable()
export class OrderReturnWorkflow {
  constructor(
    @Inject(ReturnSteps) private readonly steps: ReturnSteps,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Workflow({ name: 'orderReturn', signals: [RefundApproval] })
  async orderReturn(input: ReturnInput): Promise<ReturnOutcome> {
    const { orderId, email, chargeId, amount } = input;
    let approvedBy: 'limit' | 'approver' = 'limit';
    if (amount > this.config.returns.approvalAboveCents) {
      const decision = await Durable.waitForSignal(RefundApproval, { timeoutMs: 7 * DAY });
      if (!decision?.approved) {
        const note = decision?.note ?? (decision ? null : 'nobody decided within a week');
        await this.steps.markReturnDeclined(orderId, email, note ?? 'declined');
        return { outcome: 'DECLINED', note };
      }
      approvedBy = 'approver';
    }
    const confirmation = await Durable.callback({ timeoutMs: DAY, signal: RefundConfirmed });
    const refundId = await this.steps.requestRefund(orderId, chargeId, amount, confirmation.url);
    try {
      const confirmed = await confirmation.wait();
      if (confirmed.status !== 'refunded') {
        await this.steps.markReturnFailed(orderId, 'the provider could not refund');
        return { outcome: 'REFUND_FAILED', refundId };
      }
    } catch (err) {
      if (!(err instanceof CallbackTimeoutError)) throw err;
      await this.steps.markReturnFailed(orderId, 'the provider did not confirm within a day');
      return { outcome: 'REFUND_UNCONFIRMED', refundId };
    }
    await this.steps.markReturned(orderId, email, refundId);
    return { outcome: 'REFUNDED', refundId, approvedBy };
  }
}
