import { Body, Controller, Get, Headers, HttpCode, Inject, Param, Post, Req, type RawBodyRequest } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import { APP_CONFIG, type AppConfig } from '../config/app-config.js';
import { parseCreateOrder, parseOrderId, parseShipment } from './create-order.dto.js';
import { OrdersService } from './orders.service.js';
import { checkShipmentSignature, SHIPMENT_SIGNATURE_HEADER } from './shipment-signature.js';

@Controller('orders')
export class OrdersController {
  constructor(
    @Inject(OrdersService) private readonly orders: OrdersService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

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

  /**
   * POST /orders/:id/shipment { trackingNumber }: the carrier's webhook, signed with the shared
   * secret (header x-shipment-signature, 401 without it) → 202, the run continues; 409 once it cannot.
   */
  @Post(':id/shipment')
  @HttpCode(202)
  ship(
    @Param('id') id: string,
    @Body() body: unknown,
    @Req() req: RawBodyRequest<IncomingMessage>,
    @Headers(SHIPMENT_SIGNATURE_HEADER) signature: string | undefined,
  ) {
    const orderId = parseOrderId(id);
    checkShipmentSignature(orderId, req.rawBody, signature, this.config.shipmentWebhookSecret);
    return this.orders.ship(orderId, parseShipment(body));
  }
}
