import { Inject, Injectable, Module } from '@nestjs/common';
import { Durable, DurableModule, Step, Workflow } from 'nestjs-durable';
import { fastDurable, PrismaService, type OrderInput } from './shared.js';

/**
 * Build 2 of the order app. Against build 1: a fraud check inserted behind Durable.patched(), the
 * validate step removed, and email/receipt swapped (receipt first).
 */
@Injectable()
export class OrderStepsV2 {
  @Step() async reserve(o: OrderInput) {
    return `reserved ${o.order}`;
  }
  @Step({ name: 'fraud-check' }) async fraudCheck(o: OrderInput) {
    return `checked ${o.order}`;
  }
  @Step() async charge(o: OrderInput) {
    return `charged ${o.order}`;
  }
  @Step() async receipt(o: OrderInput) {
    return `receipt ${o.order}`;
  }
  @Step() async email(o: OrderInput) {
    return `emailed ${o.order}`;
  }
  @Step() async close(o: OrderInput) {
    return `closed ${o.order}`;
  }
}

@Injectable()
export class OrderWorkflowV2 {
  constructor(@Inject(OrderStepsV2) private readonly steps: OrderStepsV2) {}

  @Workflow({ name: 'order' })
  async order(o: OrderInput) {
    await this.steps.reserve(o);
    if (await Durable.patched('fraud-check')) await this.steps.fraudCheck(o);
    await Durable.recv('paid');
    await this.steps.charge(o);
    await this.steps.receipt(o);
    await this.steps.email(o);
    await Durable.recv('shipped');
    return this.steps.close(o);
  }
}

@Module({
  imports: [DurableModule.forRoot({ ...fastDurable, appVersion: '2' })],
  providers: [PrismaService, OrderStepsV2, OrderWorkflowV2],
})
export class AppModule {}
