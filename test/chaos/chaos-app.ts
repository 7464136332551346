import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { PrismaMariaDb } from '@prisma/adapter-mariadb';
import { PrismaPg } from '@prisma/adapter-pg';
import {
  Durable,
  DurableCron,
  postgresPoolConfig,
  DurableModule,
  DurableRuntime,
  NonRetryableError,
  Step,
  Workflow,
  type ScheduledInput,
} from 'nestjs-durable';
import { PrismaClient } from '../../src/generated/prisma/client.js';
import { PrismaClient as MysqlPrismaClient } from '../generated/mysql-prisma/client.js';
import {
  BOUNCE_WORKFLOW,
  KEYS_QUEUE,
  RATED_QUEUE,
  RATED_WORKFLOW,
  REPLY_WORKFLOW,
  SINGLE_WORKFLOW,
  SLOT_QUEUE,
  SLOT_WORKFLOW,
  STARTER_WORKFLOW,
  TICK_SCHEDULE,
  UNDO_ERROR,
} from './chaos-config.js';

/**
 * The app the chaos worker processes run: a real Nest application context with the library and
 * the workflow "chaos" (5 steps, then a child "chaos.reply" that answers a message). Configured from the environment (DATABASE_URL, DURABLE_*),
 * see chaos-config.ts. Dependencies are injected with explicit @Inject(): the processes run under
 * tsx, which emits no decorator metadata.
 */
const env = (k: string, d: number) => (process.env[k] ? Number(process.env[k]) : d);
const concurrency = env('DURABLE_CONCURRENCY', 10);
const pause = (ms: number) => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve());

/** The run's database: MariaDB for a mysql:// URL (the tests' Prisma client for it), else Postgres. */
const onMariaDb = /^(mysql|mariadb):/.test(process.env.DATABASE_URL ?? '');
/** The app's Prisma client class: both have the raw-SQL methods the steps use. */
const AppPrismaClient = (onMariaDb ? MysqlPrismaClient : PrismaClient) as typeof PrismaClient;

@Injectable()
export class ChaosPrisma extends AppPrismaClient implements OnApplicationShutdown {
  constructor() {
    // One connection per run slot (plus some) unless the driver sized it to fit the server
    // (DURABLE_PRISMA_POOL): transactional steps hold theirs while they work, others wait.
    // A transaction idle longer than the lease belongs to a frozen worker: the server ends it, so its
    // locks (a transactional step's run row) do not keep the run from being swept (docs/high-availability.md,
    // docs/databases.md).
    if (onMariaDb) {
      super({
        adapter: new PrismaMariaDb({
          ...mariaDbConfig(process.env.DATABASE_URL!),
          connectionLimit: env('DURABLE_PRISMA_POOL', concurrency + 2),
          initSql: [`SET SESSION idle_transaction_timeout = ${Math.ceil(env('DURABLE_LEASE_MS', 3_000) / 1000)}`],
        }),
      } as never);
      return;
    }
    super({
      adapter: new PrismaPg(
        postgresPoolConfig(process.env.DATABASE_URL!, {
          max: env('DURABLE_PRISMA_POOL', concurrency + 2),
          idle_in_transaction_session_timeout: env('DURABLE_LEASE_MS', 3_000),
        }),
      ),
    });
  }
  /** After nestjs-durable has drained its in-flight steps (they use this client). */
  async onApplicationShutdown() {
    await this.$disconnect();
  }
}

/** Connection settings of a mysql:// URL for the mariadb driver under Prisma's adapter. */
function mariaDbConfig(url: string) {
  const u = new URL(url);
  return {
    host: u.hostname,
    port: Number(u.port || 3306),
    user: decodeURIComponent(u.username),
    password: decodeURIComponent(u.password) || undefined,
    database: u.pathname.slice(1),
  };
}

/**
 * Input of a chaos run: how long each step works, and the durable sleep between s1 and the ledger.
 * `undo`: the run fails on purpose at the end (UNDO_ERROR), so the compensations of its steps run
 * (s2, the ledger, s1, s0: newest first) under the same chaos.
 */
export interface ChaosInput {
  stepMs: [number, number, number, number];
  sleepMs: number;
  undo?: boolean;
}

/** What the child workflow every chaos run starts (REPLY_WORKFLOW) answers. */
export interface ReplyOutput {
  token: string;
  pids: number[];
  finishedBy: number;
}

/** Input of a starter run (STARTER_WORKFLOW): its rounds of singleton and debounced starts, see ChaosSteps.keyedStarts. */
export interface StarterInput {
  index: number;
  rounds: number;
  /** The pause after each round (ms), taken in turn. */
  gapMs: number[];
  dedupeKeys: number;
  debounceKeys: number;
  debounceMs: number;
  debounceMaxMs: number;
  /** How long a singleton run holds its key's run (ms). */
  holdMs: number;
}

/** What a step returns (and its checkpoint stores): the pid tells which process wrote it. */
export interface StepResult {
  step: string;
  pid: number;
}

@Injectable()
export class ChaosSteps {
  constructor(
    @Inject(ChaosPrisma) private readonly prisma: ChaosPrisma,
    @Inject(DurableRuntime) private readonly runtime: DurableRuntime,
  ) {}

  /**
   * A plain step: counts each execution in test_step_executions (at-least-once: may exceed 1 after
   * a crash). Its compensation `uncount` records `undo:<step>` the same way.
   */
  @Step({ compensate: 'uncount' })
  async count(runId: string, step: string, ms: number): Promise<StepResult> {
    await this.prisma.$executeRaw`INSERT INTO test_step_executions (run_id, step, pid) VALUES (${runId}, ${step}, ${process.pid})`;
    // The run's stream: each plain step's name once, in step order, however often the step ran.
    await Durable.stream<string>('steps').write(step);
    await pause(ms);
    return { step, pid: process.pid };
  }

  /** The compensation of count (plain: at least once). */
  @Step()
  async uncount(runId: string, step: string, ms: number, done: StepResult): Promise<StepResult> {
    const undo = `undo:${done.step}`;
    await this.prisma.$executeRaw`INSERT INTO test_step_executions (run_id, step, pid) VALUES (${runId}, ${undo}, ${process.pid})`;
    await pause(ms);
    return { step: undo, pid: process.pid };
  }

  /**
   * A transactional step: its ledger row commits with its checkpoint, so exactly one per run. Its
   * compensation (recorded in the same transaction) writes an `unledger` row, exactly once too.
   */
  @Step({ transactional: true, transaction: { timeout: 30_000, maxWait: 10_000 }, compensate: 'unledger' })
  async ledger(runId: string, ms: number): Promise<StepResult> {
    const tx = Durable.tx<PrismaClient>();
    await tx.$executeRaw`INSERT INTO test_ledger (run_id, step, pid) VALUES (${runId}, 'ledger', ${process.pid})`;
    await pause(ms);
    return { step: 'ledger', pid: process.pid };
  }

  /**
   * The step of a flow-control run: it holds its run's slot for `ms`, and records the interval it
   * executed in (rows 'slot' and 'slot:end', clock_timestamp()) in its own transaction, so only an
   * execution whose checkpoint was accepted (its run held the lease throughout) leaves one.
   */
  @Step({ transactional: true, transaction: { timeout: 30_000, maxWait: 10_000 } })
  async holdSlot(runId: string, ms: number): Promise<StepResult> {
    const tx = Durable.tx<PrismaClient>();
    await tx.$executeRaw`INSERT INTO test_ledger (run_id, step, pid) VALUES (${runId}, 'slot', ${process.pid})`;
    await pause(ms);
    await tx.$executeRaw`INSERT INTO test_ledger (run_id, step, pid) VALUES (${runId}, 'slot:end', ${process.pid})`;
    return { step: 'slot', pid: process.pid };
  }

  /**
   * The step of a singleton run: the interval it executed in (rows 'single' and 'single:end'), as
   * holdSlot does; two runs of one dedupe key can never have accepted executions that overlap.
   */
  @Step({ transactional: true, transaction: { timeout: 30_000, maxWait: 10_000 } })
  async holdSingle(runId: string, ms: number): Promise<StepResult> {
    const tx = Durable.tx<PrismaClient>();
    await tx.$executeRaw`INSERT INTO test_ledger (run_id, step, pid) VALUES (${runId}, 'single', ${process.pid})`;
    await pause(ms);
    await tx.$executeRaw`INSERT INTO test_ledger (run_id, step, pid) VALUES (${runId}, 'single:end', ${process.pid})`;
    return { step: 'single', pid: process.pid };
  }

  /** The step of the rated and debounced runs: a short piece of work, checkpointed (nothing to count: their start times are judged). */
  @Step()
  async work(ms: number): Promise<StepResult> {
    await pause(ms);
    return { step: 'work', pid: process.pid };
  }

  /**
   * The starter's step: `rounds` rounds of 3 starts at once of a singleton run and 3 of a debounced
   * run, the keys taken in turn from `index`. A worker killed in it starts them all again on recovery.
   */
  @Step()
  async keyedStarts(input: StarterInput): Promise<StepResult> {
    const engine = this.runtime.engine;
    for (let r = 0; r < input.rounds; r++) {
      const dedupeKey = `single-${(input.index + r) % input.dedupeKeys}`;
      const debounce = {
        key: `bounce-${(input.index + r) % input.debounceKeys}`,
        periodMs: input.debounceMs,
        maxDelayMs: input.debounceMaxMs,
      };
      await Promise.all([
        ...[0, 1, 2].map(() => engine.startRun(SINGLE_WORKFLOW, { ms: input.holdMs }, { dedupeKey })),
        ...[0, 1, 2].map(() => engine.startRun(BOUNCE_WORKFLOW, { from: input.index, round: r }, { debounce })),
      ]);
      await pause(input.gapMs[r % input.gapMs.length]);
    }
    return { step: 'starts', pid: process.pid };
  }

  @Step({ transactional: true, transaction: { timeout: 30_000, maxWait: 10_000 } })
  async unledger(runId: string, ms: number): Promise<StepResult> {
    const tx = Durable.tx<PrismaClient>();
    await tx.$executeRaw`INSERT INTO test_ledger (run_id, step, amount, pid) VALUES (${runId}, 'unledger', -1, ${process.pid})`;
    await pause(ms);
    return { step: 'unledger', pid: process.pid };
  }

  /** The schedule's ledger step: one row per scheduled run, committed with its checkpoint (named "ledger" like the other, for the same checks). */
  @Step({ name: 'ledger', transactional: true, transaction: { timeout: 30_000, maxWait: 10_000 } })
  async tickLedger(runId: string): Promise<StepResult> {
    await Durable.tx<PrismaClient>().$executeRaw`INSERT INTO test_ledger (run_id, step, pid) VALUES (${runId}, 'tick', ${process.pid})`;
    return { step: 'tick', pid: process.pid };
  }
}

@Injectable()
export class ChaosWorkflows {
  constructor(@Inject(ChaosSteps) private readonly steps: ChaosSteps) {}

  /**
   * s0, s1, a durable sleep, the ledger (transactional), s2; then a child run that must answer
   * the message this run sends it (exactly-once send, recv and child result under the chaos).
   */
  @Workflow({ name: 'chaos' })
  async chaos(input: ChaosInput) {
    const runId = Durable.runId();
    const s0 = await this.steps.count(runId, 's0', input.stepMs[0]);
    const s1 = await this.steps.count(runId, 's1', input.stepMs[1]);
    await Durable.sleep(input.sleepMs);
    const ledger = await this.steps.ledger(runId, input.stepMs[2]);
    const s2 = await this.steps.count(runId, 's2', input.stepMs[3]);
    const child = await Durable.startChild<ReplyOutput>(REPLY_WORKFLOW, { stepMs: input.stepMs[0] });
    await Durable.send(child.id, 'token', { token: runId });
    const reply = await child.result();
    if (reply.token !== runId) throw new NonRetryableError(`child ${child.id} answered "${reply.token}", expected "${runId}"`);
    if (input.undo) throw new NonRetryableError(UNDO_ERROR); // the compensations of s2, ledger, s1, s0 run, then the run is FAILED
    return { pids: [s0.pid, s1.pid, ledger.pid, s2.pid], finishedBy: process.pid };
  }

  /** A run of the limited queue (its concurrency key is given at start): one step that holds the slot. */
  @Workflow({ name: SLOT_WORKFLOW, queue: SLOT_QUEUE })
  async slot(input: { ms: number }) {
    await this.steps.holdSlot(Durable.runId(), input.ms);
    return { finishedBy: process.pid };
  }

  /** A run of the rate-limited queue: one short step (its start time is what the rate limit governs). */
  @Workflow({ name: RATED_WORKFLOW, queue: RATED_QUEUE })
  async rated(input: { ms: number }) {
    await this.steps.work(input.ms);
    return { finishedBy: process.pid };
  }

  /** Starts singleton and debounced runs from its one step (see ChaosSteps.keyedStarts). */
  @Workflow({ name: STARTER_WORKFLOW, queue: KEYS_QUEUE })
  async starter(input: StarterInput) {
    await this.steps.keyedStarts(input);
    return { finishedBy: process.pid };
  }

  /** A singleton run (started with a dedupe key): holds it for a while, recording the interval. */
  @Workflow({ name: SINGLE_WORKFLOW, queue: KEYS_QUEUE })
  async single(input: { ms: number }) {
    await this.steps.holdSingle(Durable.runId(), input.ms);
    return { finishedBy: process.pid };
  }

  /** A debounced run: starts a period after the last start that joined it. */
  @Workflow({ name: BOUNCE_WORKFLOW, queue: KEYS_QUEUE })
  async bounce() {
    await this.steps.work(10);
    return { finishedBy: process.pid };
  }

  /** The child: waits for its parent's message, runs one plain step, answers with the message's token. */
  @Workflow({ name: REPLY_WORKFLOW })
  async reply(input: { stepMs: number }): Promise<ReplyOutput> {
    const message = await Durable.recv<{ token: string }>('token');
    const c0 = await this.steps.count(Durable.runId(), 'c0', input.stepMs);
    return { token: message!.token, pids: [c0.pid], finishedBy: process.pid };
  }
}

/** The schedule every worker declares (not on MariaDB, which has no schedules yet: DURABLE_CHAOS_SCHEDULE=0). */
@Injectable()
export class ChaosTick {
  constructor(@Inject(ChaosSteps) private readonly steps: ChaosSteps) {}

  /**
   * A schedule every worker declares: a run every second, each writing one ledger row. Every slot
   * from the first to the last must have exactly one run, SUCCEEDED, with one ledger row, whatever
   * the kills, zombies and outage did to the schedulers (catchUp all: slots missed while the
   * database was away run late; overlap allow: a slow run never makes a slot skip).
   */
  @DurableCron('* * * * * *', { name: TICK_SCHEDULE, catchUp: 'all', catchUpWindowMs: 3_600_000, overlap: 'allow' })
  async tick(input: ScheduledInput) {
    await this.steps.tickLedger(Durable.runId());
    return { slot: input.scheduledAt, finishedBy: process.pid };
  }
}

@Module({
  imports: [
    DurableModule.forRoot({
      prisma: ChaosPrisma,
      // The driver recognises a process's runs by this id (lease_owner, run history).
      workerId: `chaos:${process.pid}`,
      concurrency,
      poolSize: env('DURABLE_POOL_SIZE', 10),
      leaseMs: env('DURABLE_LEASE_MS', 3_000),
      heartbeatMs: env('DURABLE_HEARTBEAT_MS', 600),
      pollIntervalMs: env('DURABLE_POLL_MS', 250),
      sweepIntervalMs: env('DURABLE_SWEEP_MS', 500),
      inMemoryWaitMaxMs: env('DURABLE_IN_MEMORY_WAIT_MS', 250),
      shutdownGraceMs: 2_000,
      // The steps write to the database themselves: while it restarts they fail, and are retried
      // (a user's policy; ≥ ~15 s of retries outlasts a restart). The engine's own writes need none.
      stepRetries: { maxAttempts: 20, initialDelayMs: 100, maxDelayMs: 2_000 },
    }),
  ],
  providers: [ChaosPrisma, ChaosSteps, ChaosWorkflows, ...(process.env.DURABLE_CHAOS_SCHEDULE === '0' ? [] : [ChaosTick])],
})
export class ChaosAppModule {}
