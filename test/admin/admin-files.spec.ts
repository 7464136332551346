import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const SRC = join(process.cwd(), 'libs', 'durable', 'src');
const lines = (file: string) => readFileSync(file, 'utf8').split('\n').length;

/**
 * The admin service and its controllers: one small file per thing they serve (runs, bulk actions,
 * schedules, flow control, insights, the live feed), not one file per layer that grows with every endpoint.
 */
describe('admin API source layout', () => {
  it('keeps each part of the admin service and each admin controller small', () => {
    const parts = [
      ...readdirSync(join(SRC, 'admin'))
        .filter((f) => f === 'admin-service.ts' || f.endsWith('-admin.ts'))
        .map((f) => join(SRC, 'admin', f)),
      ...readdirSync(join(SRC, 'nest', 'admin'))
        .filter((f) => f.endsWith('.controller.ts'))
        .map((f) => join(SRC, 'nest', 'admin', f)),
    ];
    expect(parts.length).toBeGreaterThanOrEqual(10);
    const big = parts.filter((f) => lines(f) > 200).map((f) => `${f.slice(SRC.length + 1)}: ${lines(f)} lines`);
    expect(big).toEqual([]);
  });
});
