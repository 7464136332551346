import { BadRequestException, ConflictException, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { WorkflowClient } from 'nestjs-durable';
import { PrismaService } from '../prisma/prisma.service.js';
import type { CreateOrderDto } from './create-order.dto.js';
import type { FulfilOrderInput, Shipment } from './fulfilment.types.js';

@Injectable()
export class OrdersService {
  constructor(
    @Inject(PrismaService) private readonly prisma: PrismaService,
    @Inject(WorkflowClient) private readonly workflows: WorkflowClient,
  ) {}

  /**
   * Writes the order and starts its fulfilment in ONE transaction: if the commit fails there
   * is neither an order nor a run; once it commits, both exist and the run will execute, even
   * if this process dies the next instant. The run id is the order id (idempotent start).
   */
  async place(dto: CreateOrderDto) {
    return this.prisma.$transaction(async (tx) => {
      const product = await tx.stock.findUnique({ where: { sku: dto.sku } });
      if (!product) throw new BadRequestException([`unknown sku "${dto.sku}" (GET /stock lists them)`]);
      const order = await tx.order.create({ data: { ...dto, amount: product.unitPrice * dto.quantity } });
      const input: FulfilOrderInput = { orderId: order.id, email: order.email, sku: order.sku, quantity: order.quantity, amount: order.amount };
      await this.workflows.start('fulfilOrder', input, { tx, id: order.id });
      return order;
    });
  }

  /**
   * The carrier's webhook: hands the shipment to the order's run, which waits for it in
   * Durable.recv('shipment'). Carriers retry webhooks; the idempotency key keeps only the first.
   * A shipment that arrives before the payment went through waits for the run to get there.
   */
  async ship(id: string, shipment: Shipment): Promise<{ accepted: true }> {
    const order = await this.prisma.order.findUnique({ where: { id }, select: { status: true, trackingNumber: true } });
    if (!order) throw new NotFoundException(`no order ${id}`);
    if (order.status === 'REJECTED' || order.status === 'PAYMENT_FAILED') {
      throw new ConflictException(`order ${id} is ${order.status}: there is nothing to ship`);
    }
    if (order.status === 'SHIPPED' && order.trackingNumber !== shipment.trackingNumber) {
      throw new ConflictException(`order ${id} already shipped as ${order.trackingNumber}`);
    }
    await this.workflows.send(id, 'shipment', shipment, { idempotencyKey: 'shipment' });
    return { accepted: true };
  }

  /** The order, its fulfilment run (status and steps) and its emails. */
  async view(id: string) {
    const order = await this.prisma.order.findUnique({ where: { id } });
    if (!order) throw new NotFoundException(`no order ${id}`);
    const [run, emails] = await Promise.all([
      this.workflows.getRun(id),
      this.prisma.outboxEmail.findMany({ where: { orderId: id }, orderBy: { createdAt: 'asc' }, select: { kind: true, subject: true, sentAt: true } }),
    ]);
    return {
      ...order,
      emails,
      run: run && {
        id: run.id,
        status: run.status,
        output: run.output,
        error: run.error,
        attempt: run.attempt,
        steps: run.steps.map((s) => ({ seq: s.seq, name: s.name, status: s.status, attempts: s.attempts })),
      },
    };
  }
}
