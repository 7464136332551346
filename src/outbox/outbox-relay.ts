import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { PrismaService } from '../prisma/prisma.service.js';
import { FakeMailer } from './fake-mailer.js';

/**
 * Delivers outbox emails: every few hundred ms, locks a batch of unsent rows (SKIP LOCKED, so
 * several app instances share the work), sends them and marks them sent in the same
 * transaction. A crash before the commit sends them again: delivery is at-least-once.
 */
@Injectable()
export class OutboxRelay implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger('OutboxRelay');
  private timer?: NodeJS.Timeout;
  private running?: Promise<unknown>;
  private stopped = false;

  constructor(
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(FakeMailer) private readonly mailer: FakeMailer,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.schedule();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.deliverBatch()
        .catch((err: Error) => this.log.warn(`delivery failed, retrying: ${err.message}`))
        .finally(() => this.schedule());
    }, this.config.outbox.pollMs);
  }

  /** Sends up to `limit` unsent emails; returns how many. */
  async deliverBatch(limit = 20): Promise<number> {
    return this.prisma.$transaction(async (tx) => {
      const batch = await tx.$queryRaw<Array<{ id: string; to: string; subject: string }>>`
        SELECT id, "to", subject FROM outbox_emails WHERE sent_at IS NULL
        ORDER BY created_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
      for (const email of batch) await this.mailer.send(email);
      if (batch.length) await tx.outboxEmail.updateMany({ where: { id: { in: batch.map((e) => e.id) } }, data: { sentAt: new Date() } });
      return batch.length;
    });
  }
}
