import { BadRequestException } from '@nestjs/common';

/** NUL cannot be stored in (or compared with) Postgres text, and escape sequences would reach logs and emails. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

export interface CreateOrderDto {
  customer: string;
  email: string;
  sku: string;
  quantity: number;
}

/** Checks the body of POST /orders; a 400 lists every problem at once. */
export function parseCreateOrder(body: unknown): CreateOrderDto {
  const b = (body ?? {}) as Record<string, unknown>;
  const problems: string[] = [];
  const text = (key: string, max = 200) => {
    const v = b[key];
    if (typeof v !== 'string' || !v.trim() || v.length > max)
      problems.push(`${key} must be a non-empty string of at most ${max} characters`);
    else if (CONTROL.test(v)) problems.push(`${key} must not contain control characters (NUL, newlines, escapes)`);
    return typeof v === 'string' ? v.trim() : '';
  };
  const customer = text('customer');
  const email = text('email');
  if (email && !/^[^@\s]+@[^@\s]+$/.test(email)) problems.push('email must look like name@example.com');
  const sku = text('sku', 100);
  const quantity = b.quantity ?? 1;
  if (typeof quantity !== 'number' || !Number.isInteger(quantity) || quantity < 1 || quantity > 1000)
    problems.push('quantity must be an integer from 1 to 1000');
  if (problems.length) throw new BadRequestException(problems);
  return { customer, email, sku, quantity: quantity as number };
}

/** Body of POST /orders/:id/shipment: { trackingNumber }. */
export function parseShipment(body: unknown): { trackingNumber: string } {
  const t = (body as Record<string, unknown> | null)?.trackingNumber;
  if (typeof t !== 'string' || !/^[A-Za-z0-9-]{1,64}$/.test(t)) {
    throw new BadRequestException(['trackingNumber must be 1 to 64 letters, digits or dashes']);
  }
  return { trackingNumber: t };
}

/**
 * The order id of a path (/orders/:id…). A NUL in it would make Postgres refuse the lookup (a 500
 * with a stack in the log); ids are UUIDs, so anything with control characters or over 100
 * characters is a 400 before any query.
 */
export function parseOrderId(id: string): string {
  if (id.length > 100 || CONTROL.test(id)) throw new BadRequestException(['id must be at most 100 characters, without control characters']);
  return id;
}
