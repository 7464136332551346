import { Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { Durable, Step } from 'nestjs-durable';
import type { Prisma } from '../generated/prisma/client.js';
import { PrismaService } from '../prisma/prisma.service.js';
import { CATALOG } from './catalog.js';

/** Stock levels, and the reservation steps of the fulfilment workflow. */
@Injectable()
export class StockService implements OnApplicationBootstrap {
  private readonly log = new Logger('Stock');

  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {}

  async onApplicationBootstrap(): Promise<void> {
    const { count } = await this.prisma.stock.createMany({ data: CATALOG, skipDuplicates: true });
    if (count) this.log.log(`stocked ${count} products: ${CATALOG.map((p) => p.sku).join(', ')}`);
  }

  list() {
    return this.prisma.stock.findMany({ orderBy: { sku: 'asc' } });
  }

  /**
   * A transactional step: the stock update and the step's checkpoint commit in one transaction
   * (Durable.tx()), so a crash or a retry can never reserve twice. Returns false when there is
   * not enough stock; that answer is checkpointed too. Its compensation, `release`, is recorded
   * in the same transaction: it exists exactly when the reservation committed.
   */
  @Step({ transactional: true, compensate: 'release' })
  async reserve(orderId: string, sku: string, quantity: number): Promise<boolean> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    this.log.log(`reserving ${quantity} × ${sku} for order ${orderId}`);
    const { count } = await tx.stock.updateMany({
      where: { sku, available: { gte: quantity } },
      data: { available: { decrement: quantity }, reserved: { increment: quantity } },
    });
    if (count) await tx.order.update({ where: { id: orderId }, data: { status: 'RESERVED' } });
    return count === 1;
  }

  /**
   * The compensation of `reserve` (called with its arguments and its result): gives the reserved
   * units back and marks a still-open order CANCELLED. Transactional, so it happens exactly once
   * however often the run is replayed or its process killed. Runs when the payment fails
   * (Durable.compensate()) and when the order is cancelled (cancel with compensate: true).
   * A shipped order's stock has left the warehouse: it is never released (the order row is locked
   * first, so a concurrent change of its status is seen).
   */
  @Step({ transactional: true })
  async release(orderId: string, sku: string, quantity: number, reserved: boolean): Promise<void> {
    if (!reserved) return; // out of stock: nothing was taken
    const tx = Durable.tx<Prisma.TransactionClient>();
    const [order] = await tx.$queryRaw<Array<{ status: string }>>`SELECT status FROM orders WHERE id = ${orderId} FOR UPDATE`;
    if (order?.status === 'SHIPPED') {
      this.log.warn(`not releasing the stock of order ${orderId}: it has shipped`);
      return;
    }
    this.log.log(`releasing ${quantity} × ${sku} of order ${orderId}`);
    await tx.stock.update({ where: { sku }, data: { available: { increment: quantity }, reserved: { decrement: quantity } } });
    await tx.order.updateMany({ where: { id: orderId, status: { in: ['NEW', 'RESERVED', 'PAID'] } }, data: { status: 'CANCELLED' } });
  }
}
