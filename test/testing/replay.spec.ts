// Replay of a recorded run: a run exported over the admin API (what the dashboard's "Export JSON"
// downloads) replays against the same code, against a safe change, and fails with the engine's
// DeterminismError against a breaking one — in a unit test, with no database and no step body run.
import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { PrismaPg } from '@prisma/adapter-pg';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DeterminismError,
  Durable,
  DurableModule,
  replayRun as replayRecordedRun,
  Step,
  verifyRuns,
  Workflow,
  WorkflowRegistry,
} from 'nestjs-durable';
import { createDurableTestingModule, replayRun, type DurableTestingModule, type RunExport } from 'nestjs-durable/testing';
import request from 'supertest';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { runRunsCommand } from '../../libs/durable/src/cli/runs-command.js';
import { WorkflowExplorer } from '../../libs/durable/src/nest/workflow-explorer.js';
import { serverUrl } from '../support/global-setup.js';

@Injectable()
class PrismaService extends PrismaClient implements OnApplicationShutdown {
  constructor() {
    super({ adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL! }) });
  }
  async onApplicationShutdown() {
    await this.$disconnect();
  }
}

/** Counts step bodies: a replay must run none. */
const executed: string[] = [];

@Injectable()
class Steps {
  @Step() async reserve(sku: string) {
    executed.push('reserve');
    return `R-${sku}`;
  }
  @Step() async charge(amount: number) {
    executed.push('charge');
    return { chargeId: `C-${amount}` };
  }
  @Step() async audit(note: string) {
    executed.push('audit');
    return note;
  }
  @Step() async ship(reservation: string) {
    executed.push('ship');
    return `S-${reservation}`;
  }
}

type Input = { sku: string; amount: number };

/** Version 1, the code the runs were recorded with. */
@Injectable()
class OrderV1 {
  constructor(@Inject(Steps) private readonly s: Steps) {}
  @Workflow({ name: 'order' })
  async run(input: Input) {
    const reservation = await this.s.reserve(input.sku);
    const { chargeId } = await this.s.charge(input.amount);
    const go = await Durable.recv<boolean>('go');
    if (!go) return { chargeId, shipped: null };
    await Durable.sleep(3_600_000);
    return { chargeId, shipped: await this.s.ship(reservation) };
  }
}

/** Version 2, safe: a step appended after the last one. */
@Injectable()
class OrderV2Safe {
  constructor(@Inject(Steps) private readonly s: Steps) {}
  @Workflow({ name: 'order' })
  async run(input: Input) {
    const reservation = await this.s.reserve(input.sku);
    const { chargeId } = await this.s.charge(input.amount);
    const go = await Durable.recv<boolean>('go');
    if (!go) return { chargeId, shipped: null };
    await Durable.sleep(3_600_000);
    const shipped = await this.s.ship(reservation);
    await this.s.audit('shipped');
    return { chargeId, shipped };
  }
}

/** Version 2, breaking: charge before reserve. */
@Injectable()
class OrderV2Reordered {
  constructor(@Inject(Steps) private readonly s: Steps) {}
  @Workflow({ name: 'order' })
  async run(input: Input) {
    const { chargeId } = await this.s.charge(input.amount);
    const reservation = await this.s.reserve(input.sku);
    const go = await Durable.recv<boolean>('go');
    await Durable.sleep(3_600_000);
    return { chargeId, shipped: go ? await this.s.ship(reservation) : null };
  }
}

/** Version 2, safe: `charge` removed (every recorded run has passed it). */
@Injectable()
class OrderV2WithoutCharge {
  constructor(@Inject(Steps) private readonly s: Steps) {}
  @Workflow({ name: 'order' })
  async run(input: Input) {
    const reservation = await this.s.reserve(input.sku);
    const go = await Durable.recv<boolean>('go');
    if (!go) return { chargeId: null, shipped: null };
    await Durable.sleep(3_600_000);
    return { chargeId: null, shipped: await this.s.ship(reservation) };
  }
}

/** Version 2, safe: it no longer ships (the steps it used to take after the message are removed). */
@Injectable()
class OrderV2NoShipping {
  constructor(@Inject(Steps) private readonly s: Steps) {}
  @Workflow({ name: 'order' })
  async run(input: Input) {
    await this.s.reserve(input.sku);
    const { chargeId } = await this.s.charge(input.amount);
    await Durable.recv<boolean>('go');
    return { chargeId, shipped: null };
  }
}

/** The code of one version, compiled by Nest but not started: no database needed. */
async function codeOf(workflow: new (s: Steps) => unknown) {
  @Module({ imports: [DurableModule.forRoot({ prisma: {} as never, connection: false })], providers: [Steps, workflow] })
  class VersionModule {}
  return Test.createTestingModule({ imports: [VersionModule] }).compile();
}

/** The workflows of one version's code, as the engine (and verify) register them. */
async function registryOf(workflow: new (s: Steps) => unknown) {
  const registry = new WorkflowRegistry();
  (await codeOf(workflow)).get(WorkflowExplorer, { strict: false }).explore(registry);
  return registry;
}

describe('replayRun: a recorded run against current code (nestjs-durable/testing)', () => {
  let t: DurableTestingModule;
  let finished: RunExport;
  let waiting: RunExport;

  beforeAll(async () => {
    @Module({
      imports: [DurableModule.forRoot({ prisma: PrismaService, admin: { unsafeNoGuard: true } })],
      providers: [PrismaService, Steps, OrderV1],
    })
    class AppModule {}
    t = await createDurableTestingModule({ imports: [AppModule] }, { database: { url: serverUrl() }, http: true });
    const done = await t.start('order', { sku: 'mug', amount: 900 });
    await t.waitFor(done.id, { status: 'WAITING' });
    await t.send(done.id, 'go', true);
    await t.advanceTime('1h');
    expect(await t.result(done.id)).toEqual({ chargeId: 'C-900', shipped: 'S-R-mug' });
    // Exported as an operator would: the admin API (the dashboard's "Export JSON"), saved as JSON text.
    const res = await request(t.http.getHttpServer()).get(`/durable/runs/${done.id}/export`).expect(200);
    finished = JSON.parse(JSON.stringify(res.body)) as RunExport;
    const open = await t.start('order', { sku: 'cup', amount: 400 });
    await t.waitFor(open.id, { status: 'WAITING' });
    waiting = (await t.client.exportRun(open.id))!;
  });
  afterAll(() => t?.close());
  beforeEach(() => void (executed.length = 0));

  it('exports the run with its checkpoints as stored', () => {
    expect(finished).toMatchObject({
      format: 'nestjs-durable.run/1',
      run: { workflowName: 'order', status: 'SUCCEEDED', input: { sku: 'mug', amount: 900 } },
    });
    expect(finished.steps.map((s) => s.name)).toEqual(['reserve', 'charge', 'durable.recv:go', 'durable.sleep', 'ship']);
    expect(waiting.steps.map((s) => s.name)).toEqual(['reserve', 'charge']);
  });

  it('replays against the code that recorded it, and against an appended step, without running a step body', async () => {
    await expect(replayRun(finished, t)).resolves.toMatchObject({
      outcome: 'returned',
      replayed: 5,
      output: { chargeId: 'C-900', shipped: 'S-R-mug' },
    });
    await expect(replayRun(JSON.stringify(finished), await codeOf(OrderV1))).resolves.toMatchObject({ outcome: 'returned' });
    await expect(replayRun(finished, await codeOf(OrderV2Safe))).resolves.toMatchObject({ outcome: 'recording-ended', replayed: 5 });
    await expect(replayRun(waiting, await codeOf(OrderV2Safe))).resolves.toMatchObject({ outcome: 'recording-ended', replayed: 2 });
    expect(executed).toEqual([]);
  });

  it('a breaking change fails the replay with the DeterminismError a live run would meet', async () => {
    const code = await codeOf(OrderV2Reordered);
    for (const recording of [finished, waiting]) {
      const err = await replayRun(recording, code).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DeterminismError);
      expect(err).toMatchObject({ runId: recording.run.id, seq: 0, recorded: 'reserve', actual: 'charge' });
    }
    expect(executed).toEqual([]);
  });

  it('replays a run exported with the CLI (npx nestjs-durable runs export --out)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'replay-'));
    try {
      const file = join(dir, 'run.json');
      const io = { cwd: dir, out: () => {}, err: () => {} };
      expect(await runRunsCommand(['export', finished.run.id, '--out', 'run.json'], io, { DATABASE_URL: t.db.url })).toBe(0);
      await expect(replayRun(readFileSync(file, 'utf8'), await codeOf(OrderV1))).resolves.toMatchObject({
        outcome: 'returned',
        replayed: 5,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is the engine's replay (verify's): the same verdict and the same DeterminismError for every change", async () => {
    const versions = { OrderV1, OrderV2Safe, OrderV2WithoutCharge, OrderV2NoShipping, OrderV2Reordered };
    const verdicts: Record<string, string[]> = {};
    for (const [version, code] of Object.entries(versions)) {
      const registry = await registryOf(code);
      // verify, as before a deploy: every run of the test database (both are within the window) against this code.
      const report = await verifyRuns(registry, t.db.url, { finishedWithinMs: 30 * 86_400_000 });
      const failedInVerify = new Map(report.workflows.flatMap((w) => w.failures).map((f) => [f.runId, f]));
      for (const recording of [finished, waiting]) {
        const engine = await replayRecordedRun(registry.get('order'), {
          id: recording.run.id,
          input: recording.run.input,
          steps: recording.steps,
        });
        const kit = await replayRun(recording, registry).then(
          (r) => ({ ok: r.outcome }),
          (e: unknown) => ({ failed: e }),
        );
        (verdicts[version] ??= []).push(engine.verdict);
        if (engine.verdict === 'nondeterministic') {
          expect(kit).toEqual({ failed: engine.error });
          expect((kit as { failed: Error }).failed.message).toBe(engine.error!.message);
          expect(failedInVerify.get(recording.run.id)).toMatchObject({ ...engine.mismatch, message: engine.error!.message });
        } else {
          expect(kit).toEqual({
            ok: { returned: 'returned', threw: 'threw', frontier: 'recording-ended', stalled: 'stalled' }[engine.ended],
          });
          expect(failedInVerify.has(recording.run.id)).toBe(false);
        }
      }
    }
    // [finished, waiting] recording: removing steps the runs have passed replays, reordering them does
    // not. The waiting run stopped right after `charge`, which is still a @Step() method: its recv where
    // `charge` was recorded could as well be a wait inserted before it (step-matcher.ts), so both refuse.
    expect(verdicts).toEqual({
      OrderV1: ['ok', 'ok'],
      OrderV2Safe: ['ok', 'ok'],
      OrderV2WithoutCharge: ['ok', 'nondeterministic'],
      OrderV2NoShipping: ['ok', 'ok'],
      OrderV2Reordered: ['nondeterministic', 'nondeterministic'],
    });
    await expect(replayRun(finished, await codeOf(OrderV2NoShipping))).resolves.toMatchObject({
      outcome: 'returned',
      output: { chargeId: 'C-900', shipped: null },
    });
    expect(executed).toEqual([]);
  });

  it('refuses what is not an exported run', async () => {
    await expect(replayRun({ steps: [] } as never, t)).rejects.toThrow(/not an exported run/);
    await request(t.http.getHttpServer()).get('/durable/runs/no-such-run/export').expect(404);
  });
});
