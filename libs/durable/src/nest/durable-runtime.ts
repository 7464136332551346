import {
  Inject,
  Injectable,
  Logger,
  Optional,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleInit,
} from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { InvalidOptionsError, NotReadyError } from '../errors/index.js';
import { DurableEngine } from '../engine/durable-engine.js';
import { silentLogger } from '../config/options.js';
import { isVerifyMode } from '../config/limits.js';
import { WorkflowRegistry } from '../definitions/registry.js';
import { isTransactionalPrisma, type TransactionalPrisma } from '../workflow/execution-services.js';
import { WorkflowExplorer } from './workflow-explorer.js';
import { DURABLE_ENDPOINTS, DURABLE_OPTIONS, type DurableEndpointOptions, type DurableModuleOptions } from './module-definition.js';
import { checkModuleOptions } from './module-options-check.js';

/**
 * The Nest side of the engine: builds it when the module initialises (the app's PrismaClient
 * exists by then), registers discovered workflows and starts the worker at bootstrap, and
 * shuts down gracefully (drain, then hand back) when the app closes.
 */
@Injectable()
export class DurableRuntime implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private current: DurableEngine | null = null;
  readonly registry = new WorkflowRegistry();

  constructor(
    @Inject(DURABLE_OPTIONS) private readonly options: DurableModuleOptions,
    @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
    @Inject(WorkflowExplorer) private readonly explorer: WorkflowExplorer,
    @Optional() @Inject(DURABLE_ENDPOINTS) private readonly endpoints: Required<DurableEndpointOptions> | null = null,
  ) {}

  get engine(): DurableEngine {
    if (!this.current)
      throw new NotReadyError(
        'nestjs-durable is not initialised yet: use WorkflowClient after the app module has initialised (e.g. not in a constructor).',
      );
    return this.current;
  }

  onModuleInit(): void {
    checkModuleOptions(this.options, false);
    const { prisma, connection, poolSize, preparedStatements, logging, callbacks, ...engineOptions } = this.options;
    const endpoints = this.endpoints;
    const client = this.resolvePrisma(prisma);
    if (typeof (client as { onModuleDestroy?: unknown }).onModuleDestroy === 'function') {
      // Nest calls every onModuleDestroy before beforeApplicationShutdown, where in-flight steps drain:
      // a client that disconnects there makes the steps still running at shutdown fail.
      new Logger('Durable').warn(
        `${client.constructor.name} has onModuleDestroy(): Nest runs it before nestjs-durable drains in-flight steps at ` +
          `shutdown. Disconnect Prisma in onApplicationShutdown() instead, so running steps can finish their queries.`,
      );
    }
    const url = connection === undefined ? process.env.DATABASE_URL : connection;
    this.current = new DurableEngine({
      registry: this.registry,
      prisma: client,
      connection: url || undefined,
      poolSize,
      preparedStatements,
      options: {
        ...engineOptions,
        logger: logging === false ? silentLogger : new Logger('Durable'),
        // The signals and the callback path are the module's (static: they are its endpoints).
        ...(endpoints?.signals.length ? { signals: endpoints.signals } : {}),
        ...(callbacks ? { callbacks: { ...callbacks, path: endpoints?.callbackPath || callbacks.path || 'durable/callbacks' } } : {}),
        // Booted by `verify`: this instance only replays; it executes and schedules nothing.
        ...(isVerifyMode() ? { worker: false, schedules: false } : {}),
      },
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    try {
      this.explorer.explore(this.registry);
      if (isVerifyMode()) return; // `verify`: the workflows are all it needs; nothing starts, nothing is written
      this.explorer.exploreHooks(this.engine);
      await this.engine.start();
    } catch (err) {
      await this.current?.stop(); // close the engine's connections: the app will not start
      throw err;
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.current?.stop();
  }

  private resolvePrisma(prisma: DurableModuleOptions['prisma']): TransactionalPrisma {
    if (prisma === undefined || prisma === null) {
      throw new InvalidOptionsError(
        'DurableModule.forRoot() needs `prisma`: the provider token of your PrismaClient (e.g. { prisma: PrismaService }).',
      );
    }
    if (isTransactionalPrisma(prisma)) return prisma;
    let instance: unknown;
    try {
      instance = this.moduleRef.get(prisma as never, { strict: false });
    } catch {
      instance = undefined;
    }
    if (!isTransactionalPrisma(instance)) {
      const name = typeof prisma === 'function' ? prisma.name : String(prisma);
      throw new InvalidOptionsError(
        `DurableModule option \`prisma\` (${name}) must resolve to a PrismaClient instance provided in the app ` +
          `(a class extending PrismaClient, registered as a provider), got ${instance === undefined ? 'nothing' : typeof instance}.`,
      );
    }
    return instance;
  }
}
