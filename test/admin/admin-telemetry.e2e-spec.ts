import { Injectable } from '@nestjs/common';
import { OnDurableEvent, WorkflowClient, type DurableLifecycleEvent } from 'nestjs-durable';
import request from 'supertest';
import { eventually } from '../support/engine-harness.js';
import { OtelTestSdk } from '../support/otel.js';
import { createAdminApp, type AdminApp } from './support/admin-app.js';

const failures: DurableLifecycleEvent[] = [];

/** A Nest provider with a lifecycle hook, discovered like a @Workflow(). */
@Injectable()
class Alerts {
  @OnDurableEvent('run.failed')
  onFailed(event: DurableLifecycleEvent) {
    failures.push(event);
  }
}

/** What an operator sees of telemetry in the admin API: the run's trace id, and the hooks' consumers. */
describe('admin API: traces and lifecycle hooks (real Nest app)', () => {
  let a: AdminApp;
  let sdk: OtelTestSdk;
  const get = (path: string) => request(a.server).get(`/durable/${path}`);

  beforeAll(async () => {
    sdk = OtelTestSdk.register();
    a = await createAdminApp('admin_telemetry', { providers: [Alerts], engine: { hooks: { pollIntervalMs: 50, settleMs: 50 } } });
  });
  afterAll(async () => {
    await a.close();
    await sdk.shutdown();
  });

  it('a failed run started inside a span: its trace id in the run detail, the @OnDurableEvent hook called, the consumer listed', async () => {
    const client = a.app.get(WorkflowClient);
    let traceId = '';
    const handle = await sdk.tracer.startActiveSpan('POST /orders', async (span) => {
      traceId = span.spanContext().traceId;
      try {
        return await client.start('admin.fail', { reason: 'out of stock' });
      } finally {
        span.end();
      }
    });
    await expect(handle.result({ timeoutMs: 15_000 })).rejects.toThrow('out of stock');

    const detail = await get(`runs/${encodeURIComponent(handle.id)}`).expect(200);
    expect(detail.body.traceId).toBe(traceId);
    expect(detail.body.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    await eventually(async () => failures.some((f) => f.runId === handle.id), 10_000, 'the hook');
    expect(failures.find((f) => f.runId === handle.id)).toMatchObject({
      type: 'run.failed',
      workflowName: 'admin.fail',
      detail: { error: 'explode: out of stock' },
    });

    const hooks = await get('hooks').expect(200);
    expect(hooks.body.consumers).toEqual([
      {
        consumer: 'Alerts.onFailed',
        lastEventId: expect.stringMatching(/^\d+$/),
        owner: expect.any(String),
        leaseExpiresAt: expect.any(String),
        updatedAt: expect.any(String),
        behind: expect.any(Number),
      },
    ]);
    expect(BigInt(hooks.body.consumers[0].lastEventId)).toBeGreaterThanOrEqual(BigInt(failures[0].id));
    await get('hooks?x=1').expect(400);
  });
});
