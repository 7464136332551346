/** Input of the fulfilOrder workflow, written with the order in POST /orders' transaction. */
export interface FulfilOrderInput {
  orderId: string;
  email: string;
  sku: string;
  quantity: number;
  amount: number;
}

/** The message POST /orders/:id/shipment sends to the run (topic "shipment"). */
export interface Shipment {
  trackingNumber: string;
}

export type FulfilOrderResult =
  | { outcome: 'SHIPPED'; chargeId: string; trackingNumber: string }
  | { outcome: 'REJECTED'; reason: string }
  | { outcome: 'PAYMENT_FAILED'; reason: string }
  | { outcome: 'NOT_SHIPPED'; reason: string };
