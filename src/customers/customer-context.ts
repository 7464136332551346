import { AsyncLocalStorage } from 'node:async_hooks';
import { Injectable, UnauthorizedException, type NestMiddleware } from '@nestjs/common';

/** The signed-in customer of a request: the example's stand-in for the tenant a SaaS app keeps per request. */
export interface CustomerContext {
  customer: string;
}

/** Holds the request's customer while it is handled; nestjs-durable captures it at start() and restores it in the run. */
export const customerContext = new AsyncLocalStorage<CustomerContext>();

/**
 * Puts the customer of the request in customerContext. A stand-in for the app's real auth: the
 * customer's name in the header x-customer (401 without it).
 */
@Injectable()
export class CustomerContextMiddleware implements NestMiddleware {
  use(req: { headers: Record<string, string | string[] | undefined> }, _res: unknown, next: () => void): void {
    const customer = req.headers['x-customer'];
    if (typeof customer !== 'string' || !customer.trim() || customer.length > 200) {
      throw new UnauthorizedException('send the customer in the header x-customer (the example stands in for real auth)');
    }
    customerContext.run({ customer: customer.trim() }, next);
  }
}
