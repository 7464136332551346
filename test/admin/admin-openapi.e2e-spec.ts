import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { createAdminApp, type AdminApp } from './support/admin-app.js';

/** The admin API in the app's OpenAPI document (@nestjs/swagger present, as in this repository). */
describe('admin API OpenAPI description', () => {
  let a: AdminApp;
  beforeAll(async () => {
    a = await createAdminApp('admin_openapi', { admin: { unsafeNoGuard: true, path: 'ops/durable' } });
  });
  afterAll(() => a.close());

  it('describes every endpoint with its parameters and response shapes, and hides the page', () => {
    const doc = SwaggerModule.createDocument(a.app, new DocumentBuilder().setTitle('test').build());
    const paths = doc.paths;
    expect(Object.keys(paths).sort()).toEqual([
      '/ops/durable/backfills',
      '/ops/durable/backfills/{id}/pause',
      '/ops/durable/backfills/{id}/resume',
      '/ops/durable/charts',
      '/ops/durable/flow',
      '/ops/durable/flow/queues/{queue}/keys',
      '/ops/durable/flow/queues/{queue}/limits',
      '/ops/durable/flow/queues/{queue}/reset',
      '/ops/durable/hooks',
      '/ops/durable/live',
      '/ops/durable/runs',
      '/ops/durable/runs/bulk/execute',
      '/ops/durable/runs/bulk/preview',
      '/ops/durable/runs/{id}',
      '/ops/durable/runs/{id}/blockers',
      '/ops/durable/runs/{id}/cancel',
      '/ops/durable/runs/{id}/export',
      '/ops/durable/runs/{id}/fork',
      '/ops/durable/runs/{id}/resume',
      '/ops/durable/runs/{id}/streams',
      '/ops/durable/runs/{id}/streams/{stream}',
      '/ops/durable/schedules',
      '/ops/durable/schedules/{id}',
      '/ops/durable/schedules/{id}/pause',
      '/ops/durable/schedules/{id}/resume',
      '/ops/durable/schedules/{id}/trigger',
      '/ops/durable/signals',
      '/ops/durable/stats',
      '/ops/durable/versions',
      '/ops/durable/workflows',
    ]);
    expect(JSON.stringify(paths['/ops/durable/versions'].get!.responses['200'])).toContain('VersionsDto');
    expect(JSON.stringify(paths['/ops/durable/schedules/{id}'].get!.responses['200'])).toContain('ScheduleDetailDto');
    expect(JSON.stringify(paths['/ops/durable/hooks'].get!.responses['200'])).toContain('HookCursorsDto');
    expect(JSON.stringify(paths['/ops/durable/backfills'].get!.responses['200'])).toContain('BackfillListDto');
    expect(JSON.stringify(paths['/ops/durable/runs/{id}/streams/{stream}'].get!.responses['200'])).toContain('StreamPageDto');
    expect(JSON.stringify(paths['/ops/durable/signals'].get!.responses['200'])).toContain('SignalListDto');
    expect(Object.keys(paths['/ops/durable/backfills/{id}/pause'].post!.responses).sort()).toEqual(['200', '400', '404', '409']);
    expect(JSON.stringify(paths['/ops/durable/runs/bulk/preview'].post!.responses['200'])).toContain('BulkPreviewDto');
    expect(JSON.stringify(paths['/ops/durable/runs/bulk/execute'].post!.requestBody)).toContain('BulkExecuteBodyDto');
    expect(Object.keys(paths['/ops/durable/schedules/{id}/trigger'].post!.responses).sort()).toEqual(['200', '400', '404', '409']);
    // runtime schedules: create, update, delete
    expect(JSON.stringify(paths['/ops/durable/schedules'].post!.requestBody)).toContain('ScheduleCreateBodyDto');
    expect(Object.keys(paths['/ops/durable/schedules'].post!.responses).sort()).toEqual(['201', '400', '409']);
    expect(JSON.stringify(paths['/ops/durable/schedules/{id}'].patch!.requestBody)).toContain('ScheduleUpdateBodyDto');
    expect(JSON.stringify(paths['/ops/durable/schedules/{id}'].delete!.responses['200'])).toContain('ScheduleDeletedDto');
    expect(paths['/ops/durable/flow/queues/{queue}/limits'].post!.description).toMatch(/partial update.*null.*absent ones stay/);
    const list = paths['/ops/durable/runs'].get!;
    expect(list.tags).toEqual(['durable']);
    expect((list.parameters as Array<{ name: string }>).map((p) => p.name)).toEqual(
      expect.arrayContaining([
        'status',
        'workflow',
        'queue',
        'createdFrom',
        'createdTo',
        'finishedFrom',
        'finishedTo',
        'idPrefix',
        'parentId',
        'sort',
        'order',
        'limit',
        'cursor',
      ]),
    );
    expect(JSON.stringify(list.responses['200'])).toContain('RunListDto');
    expect(list.responses['400']).toBeDefined();
    const fork = paths['/ops/durable/runs/{id}/fork'].post!;
    expect(JSON.stringify(fork.requestBody)).toContain('ForkBodyDto');
    expect(Object.keys(fork.responses).sort()).toEqual(['201', '400', '404', '409']);
    const schemas = doc.components!.schemas!;
    for (const name of [
      'RunListDto',
      'RunListItemDto',
      'RunDetailDto',
      'StepDto',
      'StatsDto',
      'WorkflowsDto',
      'VersionsDto',
      'VersionInFlightDto',
      'ForkBodyDto',
      'ErrorDto',
    ])
      expect(schemas[name]).toBeDefined();
    expect(JSON.stringify(schemas.RunDetailDto)).toContain('StepDto');
    expect(JSON.stringify(schemas.RunDetailDto)).toContain('StartBlockersDto');
    expect(JSON.stringify(paths['/ops/durable/flow/queues/{queue}/limits'].post!.requestBody)).toContain('QueueLimitsBodyDto');
    expect(JSON.stringify(paths['/ops/durable/flow'].get!.responses['200'])).toContain('FlowDto');
    expect(JSON.parse(JSON.stringify(doc)).openapi).toMatch(/^3\./);
  });
});
