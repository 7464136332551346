import { createHmac, timingSafeEqual } from 'node:crypto';
import { UnauthorizedException } from '@nestjs/common';

/**
 * The header a carrier signs its shipment webhook with: `sha256=<hex HMAC-SHA256 of "<order id>.<body>">`,
 * keyed with the shared secret. The order id is signed too, so a webhook for one order cannot be
 * replayed against another.
 */
export const SHIPMENT_SIGNATURE_HEADER = 'x-shipment-signature';

/** The signature of a webhook for an order, as the carrier computes it with the shared secret. */
export function signShipment(orderId: string, body: string | Buffer, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${orderId}.`).update(body).digest('hex')}`;
}

/**
 * Refuses (401) a webhook whose signature is missing or does not match the exact bytes received:
 * only the carrier, who holds the secret, can move an order to SHIPPED. Compared in constant time.
 */
export function checkShipmentSignature(
  orderId: string,
  rawBody: Buffer | undefined,
  header: string | string[] | undefined,
  secret: string,
): void {
  const given = Buffer.from(typeof header === 'string' ? header.trim().toLowerCase() : '');
  const expected = Buffer.from(signShipment(orderId, rawBody ?? Buffer.alloc(0), secret));
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new UnauthorizedException(
      `missing or wrong ${SHIPMENT_SIGNATURE_HEADER} header: send sha256=<hex HMAC-SHA256 of "<order id>.<body>" keyed with SHIPMENT_WEBHOOK_SECRET>`,
    );
  }
}
