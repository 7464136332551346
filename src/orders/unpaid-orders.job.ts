import { Inject, Injectable, Logger } from '@nestjs/common';
import { DurableCron, IllegalTransitionError, WorkflowClient, type ScheduledInput } from 'nestjs-durable';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { PrismaService } from '../prisma/prisma.service.js';

/**
 * Every night at midnight (Paris time), orders still unpaid a day after they were placed are
 * cancelled: their fulfilment run is cancelled, reserved stock goes back, the order ends CANCELLED.
 *
 * It was an @nestjs/schedule job, run by every replica of the shop at once. Made durable with a
 * one-line change; now one run per night across all instances, missed nights run once after a
 * downtime (catchUp: 'latest', the default), never two at a time (overlap: 'skip'):
 *
 *   - @Cron(CronExpression.EVERY_DAY_AT_MIDNIGHT, { name: 'cancelUnpaidOrders', timeZone: 'Europe/Paris' })
 *   + @DurableCron(CronExpression.EVERY_DAY_AT_MIDNIGHT, { name: 'cancelUnpaidOrders', timeZone: 'Europe/Paris' })
 *
 * (This example spells the constant out, '0 0 * * *', to avoid depending on @nestjs/schedule.)
 * The method is now a workflow: it can be paused, resumed or run now from the dashboard, and its
 * runs are in durable_runs. Its body is unchanged and safe to run again (it only touches orders
 * that are still unpaid), which is what a run interrupted by a crash does.
 */
@Injectable()
export class UnpaidOrdersJob {
  private readonly log = new Logger('UnpaidOrders');

  constructor(
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(WorkflowClient) private readonly workflows: WorkflowClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @DurableCron('0 0 * * *', { name: 'cancelUnpaidOrders', timeZone: 'Europe/Paris' })
  async cancelUnpaidOrders({ scheduledAt }: ScheduledInput): Promise<{ cancelled: string[] }> {
    // The slot, not the clock: a run that starts late (or again) cancels the same orders.
    const placedBefore = new Date(scheduledAt.getTime() - this.config.orders.unpaidTtlMs);
    const unpaid = await this.prisma.order.findMany({
      where: { status: { in: ['NEW', 'RESERVED'] }, createdAt: { lt: placedBefore } },
      select: { id: true, status: true, sku: true, quantity: true },
      orderBy: { createdAt: 'asc' },
      take: 1_000,
    });
    const cancelled: string[] = [];
    for (const order of unpaid) {
      await this.workflows.cancel(order.id).catch((err: unknown) => {
        if (!(err instanceof IllegalTransitionError)) throw err; // its run ended meanwhile
      });
      const done = await this.prisma.$transaction(async (tx) => {
        const { count } = await tx.order.updateMany({
          where: { id: order.id, status: order.status },
          data: {
            status: 'CANCELLED',
            failureReason: `unpaid ${Math.round(this.config.orders.unpaidTtlMs / 3600_000)} h after it was placed`,
          },
        });
        if (count && order.status === 'RESERVED') {
          await tx.stock.update({
            where: { sku: order.sku },
            data: { available: { increment: order.quantity }, reserved: { decrement: order.quantity } },
          });
        }
        return count === 1;
      });
      if (done) cancelled.push(order.id);
    }
    if (cancelled.length) this.log.log(`cancelled ${cancelled.length} unpaid order(s) placed before ${placedBefore.toISOString()}`);
    return { cancelled };
  }
}
