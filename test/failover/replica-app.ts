import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { DurableModule, Step, Workflow } from 'nestjs-durable';
import { prepareClusterDatabase } from '../chaos/chaos-failover.js';
import { PgCluster } from '../support/pg-cluster.js';
import { prismaFor } from '../support/prisma.js';

/** Token of the app's PrismaClient, as an app's PrismaService would be. */
export class PrismaService {}

@Injectable()
class ReplicaSteps {
  @Step()
  async one() {
    return 1;
  }
}

@Injectable()
class ReplicaWorkflows {
  constructor(private readonly steps: ReplicaSteps) {}
  @Workflow({ name: 'replica.one' })
  async run() {
    return this.steps.one();
  }
}

/** A Nest app on a primary whose admin API reads from the primary's hot standby (admin.readReplicaUrl). */
export interface ReplicaApp {
  cluster: PgCluster;
  app: INestApplication;
  primaryUrl: string;
  standbyUrl: string;
  close(): Promise<void>;
}

export async function startReplicaApp(): Promise<ReplicaApp> {
  const cluster = await PgCluster.start({ synchronous: true });
  await prepareClusterDatabase(cluster, 'app');
  const primaryUrl = cluster.primary.url('app');
  const standbyUrl = cluster.standby.url('app');
  const prisma = prismaFor(primaryUrl, 2);
  @Module({
    imports: [
      DurableModule.forRoot({
        prisma: PrismaService,
        connection: primaryUrl,
        worker: false,
        logging: false,
        admin: { unsafeNoGuard: true, readReplicaUrl: standbyUrl },
      }),
    ],
    providers: [{ provide: PrismaService, useValue: prisma }, ReplicaSteps, ReplicaWorkflows],
    exports: [PrismaService],
  })
  class ReplicaAppModule {}
  const moduleRef = await Test.createTestingModule({ imports: [ReplicaAppModule] }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return {
    cluster,
    app,
    primaryUrl,
    standbyUrl,
    async close() {
      await app.close();
      await prisma.$disconnect();
      await cluster.stop();
    },
  };
}
