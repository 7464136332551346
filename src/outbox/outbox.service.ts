import { Injectable } from '@nestjs/common';
import type { Prisma } from '../generated/prisma/client.js';

export type EmailKind =
  | 'order-confirmed'
  | 'payment-failed'
  | 'out-of-stock'
  | 'shipment-overdue'
  | 'order-shipped'
  | 'review-request'
  | 'not-shipped'
  | 'return-refunded'
  | 'return-declined';

/**
 * Transactional outbox: an email is a row written in the same transaction as the change it
 * announces, so there is never an email about a change that rolled back, nor a change without
 * its email. The OutboxRelay sends the rows later. (orderId, kind) is unique: one email of each kind.
 */
@Injectable()
export class OutboxService {
  async enqueue(tx: Prisma.TransactionClient, email: { orderId: string; kind: EmailKind; to: string; subject: string }): Promise<void> {
    await tx.outboxEmail.createMany({ data: [email], skipDuplicates: true });
  }
}
