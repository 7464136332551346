import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';

export interface Charge {
  chargeId: string;
  amount: number;
}

/** The gateway is down or timed out: worth retrying. */
export class GatewayUnavailableError extends Error {
  override name = 'GatewayUnavailableError';
}

/** The card was declined: retrying will not help. */
export class CardDeclinedError extends Error {
  override name = 'CardDeclinedError';
}

/**
 * Stands in for a remote payment provider: slow, and failing at random like a real one on a
 * bad day. Like real providers it honours an idempotency key, so a charge retried with the same
 * key (after a timeout, or after our process crashed mid-call) is not taken twice. This fake
 * remembers keys in memory only, i.e. until the process exits.
 * Cards of customers whose email contains "decline" are always declined (to try the unhappy path).
 */
@Injectable()
export class PaymentGateway {
  private readonly log = new Logger('PaymentGateway');
  private readonly charges = new Map<string, Charge>();
  private readonly refunds = new Map<string, string>();

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  async charge(req: { idempotencyKey: string; amount: number; email: string }, signal?: AbortSignal): Promise<Charge> {
    const { minLatencyMs, maxLatencyMs, failureRate } = this.config.payments;
    await sleep(minLatencyMs + Math.random() * Math.max(0, maxLatencyMs - minLatencyMs), undefined, { signal });
    const known = this.charges.get(req.idempotencyKey);
    if (known) return known;
    if (req.email.includes('decline')) throw new CardDeclinedError(`card of ${req.email} declined`);
    if (Math.random() < failureRate) throw new GatewayUnavailableError('payment gateway timed out (503)');
    const charge = { chargeId: `ch_${randomUUID().slice(0, 8)}`, amount: req.amount };
    this.charges.set(req.idempotencyKey, charge);
    this.log.log(`charged ${req.amount} cents (key ${req.idempotencyKey}) → ${charge.chargeId}`);
    return charge;
  }

  /** Pays a charge back; idempotent by key like charge(). */
  async refund(req: { idempotencyKey: string; chargeId: string; amount: number }, signal?: AbortSignal): Promise<{ refundId: string }> {
    const { minLatencyMs, maxLatencyMs } = this.config.payments;
    await sleep(minLatencyMs + Math.random() * Math.max(0, maxLatencyMs - minLatencyMs), undefined, { signal });
    let refundId = this.refunds.get(req.idempotencyKey);
    if (!refundId) {
      refundId = `re_${randomUUID().slice(0, 8)}`;
      this.refunds.set(req.idempotencyKey, refundId);
      this.log.log(`refunded ${req.amount} cents of ${req.chargeId} (key ${req.idempotencyKey}) → ${refundId}`);
    }
    return { refundId };
  }
}
