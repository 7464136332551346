import { Inject, Injectable, Module } from '@nestjs/common';
import { Durable, DurableModule, Step, Workflow } from 'nestjs-durable';
import { fastDurable, PrismaService, type OrderInput } from './shared.js';

/** Build 1 of the order app: reserve, validate, (paid), charge, email, receipt, (shipped), close. */
@Injectable()
export class OrderStepsV1 {
  @Step() async reserve(o: OrderInput) {
    return `reserved ${o.order}`;
  }
  @Step() async validate(o: OrderInput) {
    return `valid ${o.order}`;
  }
  @Step() async charge(o: OrderInput) {
    return `charged ${o.order}`;
  }
  @Step() async email(o: OrderInput) {
    return `emailed ${o.order}`;
  }
  @Step() async receipt(o: OrderInput) {
    return `receipt ${o.order}`;
  }
  @Step() async close(o: OrderInput) {
    return `closed ${o.order}`;
  }
}

@Injectable()
export class OrderWorkflowV1 {
  constructor(@Inject(OrderStepsV1) private readonly steps: OrderStepsV1) {}

  @Workflow({ name: 'order' })
  async order(o: OrderInput) {
    await this.steps.reserve(o);
    await this.steps.validate(o);
    await Durable.recv('paid');
    await this.steps.charge(o);
    await this.steps.email(o);
    await this.steps.receipt(o);
    await Durable.recv('shipped');
    return this.steps.close(o);
  }
}

@Module({
  imports: [DurableModule.forRoot({ ...fastDurable, appVersion: '1' })],
  providers: [PrismaService, OrderStepsV1, OrderWorkflowV1],
})
export class AppModule {}
