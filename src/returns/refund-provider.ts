import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';

/** A refund the provider accepted and will confirm to its callback URL. */
export interface PendingRefund {
  refundId: string;
  chargeId: string;
  amount: number;
  /** Where the provider POSTs its confirmation (a secret: it resumes the run). */
  callbackUrl: string;
  requestedAt: string;
}

/**
 * Stands in for a refund provider that works asynchronously: it accepts a refund at once and
 * confirms it later by POSTing to the callback URL it was given. This fake keeps the refunds it
 * accepted in memory (idempotent by key) and lets you (or a test) play the provider: GET
 * /fake-provider/refunds lists them with their callback URLs.
 */
@Injectable()
export class RefundProvider {
  private readonly log = new Logger('RefundProvider');
  private readonly byKey = new Map<string, PendingRefund>();

  requestRefund(req: { idempotencyKey: string; chargeId: string; amount: number; callbackUrl: string }): { refundId: string } {
    let refund = this.byKey.get(req.idempotencyKey);
    if (!refund) {
      refund = {
        refundId: `re_${randomUUID().slice(0, 8)}`,
        chargeId: req.chargeId,
        amount: req.amount,
        callbackUrl: req.callbackUrl,
        requestedAt: new Date().toISOString(),
      };
      this.byKey.set(req.idempotencyKey, refund);
      // The URL is a secret (it resumes the run): it is not logged.
      this.log.log(
        `refund ${refund.refundId} of ${req.amount} cents of ${req.chargeId} accepted; it will be confirmed to its callback URL`,
      );
    }
    return { refundId: refund.refundId };
  }

  pending(): PendingRefund[] {
    return [...this.byKey.values()];
  }
}
