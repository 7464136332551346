// npx tsx src/codec-bench.ts [codec module path]: encode + decode time of a typical 1 KB step result
// (an order with nested lines, a Date and plain strings), the engine's per-checkpoint codec cost.
// Pass the path of another codec.ts (e.g. a copy from an older commit) to compare two side by side.
import { performance } from 'node:perf_hooks';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

type Codec = { encode(v: unknown, o: { where: string }): string; decode(v: unknown): unknown };

const payload = {
  orderId: 'a3c1d2e4-5f60-4718-9a2b-3c4d5e6f7081',
  customer: { name: 'Ada Lovelace', email: 'ada@example.com', tier: 'gold' },
  placedAt: new Date('2026-12-04T10:00:00Z'),
  lines: Array.from({ length: 8 }, (_, i) => ({
    sku: `sku-${i}`,
    title: `Product number ${i} with a name`,
    quantity: i + 1,
    unitPrice: 1299 + i,
  })),
  notes: 'Leave at the door; ring twice. Fragile items inside.',
};

async function measure(label: string, path: string, rounds = 200_000): Promise<void> {
  const codec = (await import(pathToFileURL(resolve(path)).href)) as Codec;
  const bytes = codec.encode(payload, { where: 'bench' }).length;
  for (let i = 0; i < 20_000; i++) codec.decode(JSON.parse(codec.encode(payload, { where: 'bench' })));
  let t = performance.now();
  let text = '';
  for (let i = 0; i < rounds; i++) text = codec.encode(payload, { where: 'bench' });
  const encodeUs = ((performance.now() - t) * 1000) / rounds;
  const parsed = JSON.parse(text);
  t = performance.now();
  for (let i = 0; i < rounds; i++) codec.decode(parsed);
  const decodeUs = ((performance.now() - t) * 1000) / rounds;
  console.log(`${label.padEnd(10)} ${bytes} B   encode ${encodeUs.toFixed(2)} µs   decode ${decodeUs.toFixed(2)} µs`);
}

const here = '../libs/durable/src/codec/codec.ts';
const other = process.argv[2];
for (let round = 0; round < 2; round++) {
  if (other) await measure('other', other);
  await measure('this', here);
}
