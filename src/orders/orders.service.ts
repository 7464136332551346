import { BadRequestException, ConflictException, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { IllegalTransitionError, PivotPassedError, WorkflowClient } from 'nestjs-durable';
import { PrismaService } from '../prisma/prisma.service.js';
import type { CreateOrderDto } from './create-order.dto.js';
import type { FulfilOrderInput, Shipment } from './fulfilment.types.js';

const FINISHED = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

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
      const input: FulfilOrderInput = {
        orderId: order.id,
        email: order.email,
        sku: order.sku,
        quantity: order.quantity,
        amount: order.amount,
      };
      await this.workflows.start('fulfilOrder', input, { tx, id: order.id });
      return order;
    });
  }

  /**
   * The carrier's webhook: hands the shipment to the order's run, which waits for it in
   * Durable.recv('shipment'). Carriers retry webhooks; the idempotency key keeps only the first.
   * A shipment that arrives before the payment went through waits for the run to get there.
   * An order that is cancelled (or being cancelled), rejected, or whose fulfilment has ended
   * cannot take a shipment any more: 409 says why, instead of a message nobody will read.
   */
  async ship(id: string, shipment: Shipment): Promise<{ accepted: true }> {
    const order = await this.prisma.order.findUnique({ where: { id }, select: { status: true, trackingNumber: true } });
    if (!order) throw new NotFoundException(`no order ${id}`);
    if (['REJECTED', 'PAYMENT_FAILED', 'CANCELLED', 'NOT_SHIPPED'].includes(order.status)) {
      throw new ConflictException(`order ${id} is ${order.status}: there is nothing to ship`);
    }
    if (order.status === 'SHIPPED' && order.trackingNumber !== shipment.trackingNumber) {
      throw new ConflictException(`order ${id} already shipped as ${order.trackingNumber}`);
    }
    const run = await this.workflows.getRun(id);
    if (run?.cancelRequestedAt && !FINISHED.has(run.status)) {
      throw new ConflictException(`order ${id} is being cancelled: its stock is being released, there is nothing to ship`);
    }
    if (!run || FINISHED.has(run.status)) {
      throw new ConflictException(`order ${id}'s fulfilment has ended (${run?.status ?? 'no run'}): a shipment can no longer be accepted`);
    }
    await this.workflows.send(id, 'shipment', shipment, { idempotencyKey: 'shipment' });
    return { accepted: true };
  }

  /**
   * Cancels an order that has not shipped: its run stops at its next step, then undoes what it did
   * — the charge is refunded, the stock released and the order marked CANCELLED — each exactly
   * once (the compensations of its completed steps, newest first). 202: it happens in the
   * background; GET /orders/:id shows it. Asking again is harmless.
   * The order row is locked while this decides (marking it shipped waits, and is then refused by
   * the engine: shipping is the saga's pivot); a shipment that committed first makes it a 409.
   */
  async cancel(id: string): Promise<{ id: string; status: string; cancelling: boolean }> {
    return this.prisma.$transaction(async (tx) => {
      const [order] = await tx.$queryRaw<Array<{ status: string }>>`SELECT status FROM orders WHERE id = ${id} FOR UPDATE`;
      if (!order) throw new NotFoundException(`no order ${id}`);
      if (order.status === 'CANCELLED') return { id, status: order.status, cancelling: false };
      if (['SHIPPED', 'REJECTED', 'PAYMENT_FAILED', 'NOT_SHIPPED'].includes(order.status)) {
        throw new ConflictException(`order ${id} is ${order.status}: it can no longer be cancelled`);
      }
      try {
        await this.workflows.cancel(id, { compensate: true });
      } catch (err) {
        if (err instanceof PivotPassedError) throw new ConflictException(`order ${id} has shipped: it can no longer be cancelled`);
        if (err instanceof IllegalTransitionError) throw new ConflictException(`order ${id} can no longer be cancelled: ${err.message}`);
        throw err;
      }
      return { id, status: order.status, cancelling: true };
    });
  }

  /** The order, its fulfilment run (status and steps) and its emails. */
  async view(id: string) {
    const order = await this.prisma.order.findUnique({ where: { id } });
    if (!order) throw new NotFoundException(`no order ${id}`);
    // The run first, then the emails: an email a step wrote commits before the run can end, so a run
    // read as finished always comes with every email it wrote (read side by side, the emails could be
    // read from before the last step and the run from after its end).
    const run = await this.workflows.getRun(id);
    const emails = await this.prisma.outboxEmail.findMany({
      where: { orderId: id },
      orderBy: { createdAt: 'asc' },
      select: { kind: true, subject: true, sentAt: true },
    });
    return {
      ...order,
      emails,
      run: run && {
        id: run.id,
        status: run.status,
        cancelRequestedAt: run.cancelRequestedAt,
        output: run.output,
        error: run.error,
        attempt: run.attempt,
        steps: run.steps.map((s) => ({ seq: s.seq, name: s.name, status: s.status, attempts: s.attempts })),
      },
    };
  }
}
