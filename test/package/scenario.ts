import { sh } from './matrix.js';
import type { ScenarioReport } from './consumer-apps.js';

/**
 * The consumer app's scenario (its main.ts, see consumer-apps.ts), on any database: runs the
 * compiled app, which drives itself over HTTP and closes, and returns the report it printed last.
 */
export function runScenario(node: string, main: string, cwd: string, databaseUrl: string): ScenarioReport {
  const out = sh(node, [main], cwd, { DATABASE_URL: databaseUrl }, 90_000);
  return JSON.parse(out.trim().split('\n').pop()!) as ScenarioReport;
}

/** What the app must have seen: the committed start ran, the rolled-back one did not, the admin API is guarded and described. */
export function expectReport(report: ScenarioReport): void {
  const { committed, rolledBack } = report;
  expect(committed.committed).toBe(true);
  expect(rolledBack.committed).toBe(false);
  expect(report.result).toEqual({ text: 'hello Ada', runId: committed.id });
  expect(report.adminWithoutToken).toBe(403);
  expect(report.adminRun).toEqual({ id: committed.id, status: 'SUCCEEDED' });
  // The admin API is described in the app's OpenAPI document (@nestjs/swagger, an optional peer).
  expect(report.swaggerPaths).toEqual(expect.arrayContaining(['/durable/runs', '/durable/runs/{id}']));
  expect(report.engineEntry.length).toBeGreaterThan(0);
}
