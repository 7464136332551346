import { Controller, Get, Inject } from '@nestjs/common';
import { StockService } from './stock.service.js';

@Controller('stock')
export class StockController {
  constructor(@Inject(StockService) private readonly stock: StockService) {}

  /** GET /stock: what can be ordered, with prices (cents) and levels. */
  @Get()
  list() {
    return this.stock.list();
  }
}
