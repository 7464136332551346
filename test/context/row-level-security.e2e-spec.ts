import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import { Durable, DurableEngine, WorkflowRegistry } from 'nestjs-durable';
import { FAST } from '../support/engine-harness.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { prismaFor } from '../support/prisma.js';

/**
 * PostgreSQL row-level security inside workflows: the app's table has a policy on the setting
 * app.tenant_id, and the engine option context.settings sets it (SET LOCAL) from the run's context
 * in every transactional step. A step that forgets the tenant filter still sees only its tenant's
 * rows, cannot write another tenant's, and a run without a context sees nothing. The app connects
 * as a role that is not a superuser (superusers and table owners bypass row-level security).
 */
const ROLE = 'durable_rls_app';

describe('row-level security from the run context (PostgreSQL)', () => {
  const requestContext = new AsyncLocalStorage<{ tenantId: string }>();
  let db: TestDatabase;
  let admin: pg.Pool;
  let appPrisma: ReturnType<typeof prismaFor>;
  let engine: DurableEngine;

  beforeAll(async () => {
    db = await createTestDatabase('row_level_security');
    admin = new pg.Pool({ connectionString: db.url, max: 2 });
    await admin.query(`DO $$ BEGIN CREATE ROLE ${ROLE} LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`);
    await admin.query(`
      CREATE TABLE tenant_notes (id serial PRIMARY KEY, tenant text NOT NULL, body text NOT NULL);
      ALTER TABLE tenant_notes ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON tenant_notes
        USING (tenant = current_setting('app.tenant_id', true))
        WITH CHECK (tenant = current_setting('app.tenant_id', true));
      INSERT INTO tenant_notes (tenant, body) VALUES ('acme', 'acme-1'), ('globex', 'globex-1'), ('acme', 'acme-2');
      GRANT USAGE ON SCHEMA public TO ${ROLE};
      GRANT ALL ON ALL TABLES IN SCHEMA public TO ${ROLE};
      GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ${ROLE};`);
    const clock = await admin.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'durable_virtual_clock'`);
    if (clock.rowCount) {
      await admin.query(
        `GRANT USAGE ON SCHEMA durable_virtual_clock TO ${ROLE}; GRANT SELECT ON ALL TABLES IN SCHEMA durable_virtual_clock TO ${ROLE}`,
      );
    }
    const url = new URL(db.url);
    url.username = ROLE;
    appPrisma = prismaFor(url.toString());

    const registry = new WorkflowRegistry();
    registry.register({
      name: 'notes',
      queue: 'default',
      options: {},
      run: async (input: unknown) => {
        const write = (input as { write?: string } | null)?.write;
        return Durable.step(
          'read-and-write',
          async () => {
            const tx = Durable.tx<typeof appPrisma>();
            // No tenant filter here: the policy applies it.
            const rows = await tx.$queryRawUnsafe<Array<{ body: string }>>('SELECT body FROM tenant_notes ORDER BY id');
            if (write) await tx.$executeRawUnsafe('INSERT INTO tenant_notes (tenant, body) VALUES ($1, $2)', write, `${write}-new`);
            return rows.map((r) => r.body);
          },
          { transactional: true, retries: 0 },
        );
      },
    });
    engine = new DurableEngine({
      registry,
      connection: db.url,
      prisma: appPrisma,
      options: {
        ...FAST,
        context: {
          capture: () => requestContext.getStore(),
          settings: (ctx: { tenantId: string }) => ({ 'app.tenant_id': ctx.tenantId }),
        },
      },
    });
    await engine.start();
  });

  afterAll(async () => {
    await engine.stop();
    await appPrisma.$disconnect();
    await admin.end();
    await db.drop();
  });

  it('a transactional step that forgets the tenant filter sees only its tenant’s rows', async () => {
    const acme = await requestContext.run({ tenantId: 'acme' }, () => engine.startRun('notes', {}));
    const globex = await requestContext.run({ tenantId: 'globex' }, () => engine.startRun('notes', {}));
    await expect(acme.result({ timeoutMs: 15_000 })).resolves.toEqual(['acme-1', 'acme-2']);
    await expect(globex.result({ timeoutMs: 15_000 })).resolves.toEqual(['globex-1']);
  });

  it('a run without a context sees no tenant’s rows', async () => {
    const none = await engine.startRun('notes', {});
    await expect(none.result({ timeoutMs: 15_000 })).resolves.toEqual([]);
  });

  it('a step cannot write another tenant’s row: the policy refuses it and the step’s transaction rolls back', async () => {
    const own = await requestContext.run({ tenantId: 'acme' }, () => engine.startRun('notes', { write: 'acme' }));
    await expect(own.result({ timeoutMs: 15_000 })).resolves.toEqual(['acme-1', 'acme-2']);
    const other = await requestContext.run({ tenantId: 'acme' }, () => engine.startRun('notes', { write: 'globex' }));
    await expect(other.result({ timeoutMs: 15_000 })).rejects.toThrow(/row-level security/);
    const { rows } = await admin.query(`SELECT tenant, body FROM tenant_notes WHERE body LIKE '%-new' ORDER BY id`);
    expect(rows).toEqual([{ tenant: 'acme', body: 'acme-new' }]);
    // The setting was local to the step's transaction: nothing of it is left on the app's connections.
    const left = await appPrisma.$queryRawUnsafe<Array<{ t: string | null }>>(`SELECT current_setting('app.tenant_id', true) AS t`);
    expect(left[0].t ?? '').toBe('');
  });
});
