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
   * not enough stock; that answer is checkpointed too.
   */
  @Step({ transactional: true })
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

  /** Compensation when the payment fails: gives the reserved units back, exactly once. */
  @Step({ transactional: true })
  async release(orderId: string, sku: string, quantity: number): Promise<void> {
    const tx = Durable.tx<Prisma.TransactionClient>();
    this.log.log(`releasing ${quantity} × ${sku} of order ${orderId}`);
    await tx.stock.update({ where: { sku }, data: { available: { increment: quantity }, reserved: { decrement: quantity } } });
  }
}
