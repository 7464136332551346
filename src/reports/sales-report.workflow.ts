import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { Step, Workflow } from 'nestjs-durable';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { PrismaService } from '../prisma/prisma.service.js';

/** One day's sales: orders placed that day by status, and what the paid ones brought in. */
export interface SalesTally {
  day: string;
  orders: Record<string, number>;
  paidCents: number;
}

/**
 * The daily sales report: count the day's orders, then write them to a file in REPORTS_DIR. It
 * is the example's way to see a run FAIL and be resumed: when the directory is missing the
 * write fails (ENOENT) on every attempt, the run ends FAILED with that error; create the
 * directory and press Resume in the dashboard (or resume(id)): the tally is replayed from its
 * checkpoint, only the write runs again.
 */
@Injectable()
export class SalesReportWorkflow {
  private readonly log = new Logger('SalesReport');

  constructor(
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Workflow({ name: 'salesReport' })
  async salesReport(input: { day: string }): Promise<{ file: string; tally: SalesTally }> {
    const tally = await this.tally(input.day);
    const file = await this.publish(tally);
    return { file, tally };
  }

  /** A read in a step: its answer is checkpointed, so a resumed run reports the same figures. */
  @Step()
  async tally(day: string): Promise<SalesTally> {
    const from = new Date(`${day}T00:00:00.000Z`);
    const to = new Date(from.getTime() + 24 * 3600_000);
    const rows = await this.prisma.order.groupBy({
      by: ['status'],
      where: { createdAt: { gte: from, lt: to } },
      _count: { _all: true },
      _sum: { amount: true },
    });
    const orders: Record<string, number> = {};
    let paidCents = 0;
    for (const r of rows) {
      orders[r.status] = r._count._all;
      if (['PAID', 'SHIPPED'].includes(r.status)) paidCents += r._sum.amount ?? 0;
    }
    return { day, orders, paidCents };
  }

  /** Writes the report (the same file again if a crash repeats it). Three attempts, then the run fails. */
  @Step({ retries: { maxAttempts: 3, initialDelayMs: 200 } })
  async publish(tally: SalesTally): Promise<string> {
    const file = join(this.config.reports.dir, `sales-${tally.day}.json`);
    await writeFile(file, JSON.stringify(tally, null, 2) + '\n');
    this.log.log(`sales report of ${tally.day} written to ${file}`);
    return file;
  }
}
