/** What the example shop sells; inserted at startup when missing. Prices in cents. */
export const CATALOG = [
  { sku: 'espresso-beans', unitPrice: 1_800, available: 1_000 },
  { sku: 'grinder', unitPrice: 12_900, available: 25 },
  { sku: 'mug', unitPrice: 900, available: 500 },
  { sku: 'vintage-kettle', unitPrice: 4_500, available: 0 },
];
