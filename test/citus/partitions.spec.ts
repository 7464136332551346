import { partitionKey, partitionOf, partitionText } from '../../libs/durable/src/store/partitions.js';
import { groupChildId } from '../../libs/durable/src/workflow/child-groups.js';

describe('partitions (distributed mode)', () => {
  it("puts a run's children, and theirs, in its own partition", () => {
    for (const root of ['order-17', 'a:b:c', '0f6a9e2c-1d3b-4c5e-8f7a-9b0c1d2e3f40']) {
      const child = `${root}:child:3`;
      const grandchild = groupChildId(child, 4, 120);
      expect(partitionKey(grandchild)).toBe(root);
      expect(partitionOf(grandchild, 64)).toBe(partitionOf(root, 64));
    }
  });

  it('spreads ids evenly over the partitions', () => {
    const counts = new Array(16).fill(0);
    for (let i = 0; i < 16_000; i++) counts[partitionOf(`run-${i}`, 16)]++;
    expect(Math.min(...counts)).toBeGreaterThan(850);
    expect(Math.max(...counts)).toBeLessThan(1150);
  });

  it("names one partition's per-run tables and leaves the shared ones and index names alone", () => {
    const text = `SELECT 1 FROM durable_runs r JOIN durable_run_events e ON e.run_id = r.id, durable_queue_limits l /* durable_runs_claim_idx */`;
    expect(partitionText(text, 7)).toBe(
      `SELECT 1 FROM durable_p7.durable_runs r JOIN durable_p7.durable_run_events e ON e.run_id = r.id, durable_queue_limits l /* durable_runs_claim_idx */`,
    );
  });
});
