import { Body, Controller, Get, HttpCode, Inject, Param, Post } from '@nestjs/common';
import { parseCreateOrder, parseOrderId, parseShipment } from './create-order.dto.js';
import { OrdersService } from './orders.service.js';

@Controller('orders')
export class OrdersController {
  constructor(@Inject(OrdersService) private readonly orders: OrdersService) {}

  /** POST /orders { customer, email, sku, quantity } → 201 with the order (status NEW). */
  @Post()
  place(@Body() body: unknown) {
    return this.orders.place(parseCreateOrder(body));
  }

  /** GET /orders/:id → the order with its workflow run (status, steps) and emails. */
  @Get(':id')
  view(@Param('id') id: string) {
    return this.orders.view(parseOrderId(id));
  }

  /** POST /orders/:id/cancel → 202: the run undoes what it did (refund, stock back), the order ends CANCELLED. */
  @Post(':id/cancel')
  @HttpCode(202)
  cancel(@Param('id') id: string) {
    return this.orders.cancel(parseOrderId(id));
  }

  /** POST /orders/:id/shipment { trackingNumber }: the carrier's webhook → 202, the run continues; 409 once it cannot. */
  @Post(':id/shipment')
  @HttpCode(202)
  ship(@Param('id') id: string, @Body() body: unknown) {
    return this.orders.ship(parseOrderId(id), parseShipment(body));
  }
}
