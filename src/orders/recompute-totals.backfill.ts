import { Inject, Injectable } from '@nestjs/common';
import { Durable, Workflow, type BackfillInput } from 'nestjs-durable';
import type { Prisma } from '../generated/prisma/client.js';
import { PrismaService } from '../prisma/prisma.service.js';
import { CATALOG } from '../stock/catalog.js';

type OrderTotal = { id: string; sku: string; quantity: number; amount: number };

/**
 * A data migration as a durable backfill: every order's amount recomputed from the catalog price,
 * in batches of 200 whose updates commit with the cursor — each order exactly once, through crashes,
 * deploys and pauses. Start it with POST /orders/recompute-totals (admin token); follow it in the
 * dashboard's Backfills panel or with `npx nestjs-durable backfills list`.
 */
@Injectable()
export class RecomputeTotalsBackfill {
  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {}

  @Workflow({ name: 'recomputeOrderTotals', queue: 'backfills' })
  run(input: BackfillInput) {
    return Durable.backfill<OrderTotal, string>(input, {
      batchSize: 200,
      read: (after, limit, tx: Prisma.TransactionClient) =>
        tx.order.findMany({
          where: after === null ? {} : { id: { gt: after } },
          orderBy: { id: 'asc' },
          take: limit,
          select: { id: true, sku: true, quantity: true, amount: true },
        }),
      key: (order) => order.id,
      process: async (orders, tx: Prisma.TransactionClient) => {
        for (const o of orders) {
          const price = CATALOG.find((c) => c.sku === o.sku)?.unitPrice;
          if (price !== undefined && o.amount !== price * o.quantity) {
            await tx.order.update({ where: { id: o.id }, data: { amount: price * o.quantity } });
          }
        }
      },
      estimate: () => this.prisma.order.count(),
    });
  }
}
