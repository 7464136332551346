import { describeChange } from './file-change.js';
import type { InitPlan } from './init.js';
import { shown } from './prisma-project.js';

/** What init did (or, with --dry-run, would do), then the commands that create the tables. */
export function initReport(plan: InitPlan, dryRun: boolean): string {
  const { project, changes, notes } = plan;
  const root = project.root;
  const source = {
    default: "Prisma's default location",
    config: `from ${shown(root, project.config?.path ?? root)}`,
    'package.json': 'from package.json',
    'command line': 'from --schema',
  }[project.schema.source];
  const lines = [`Prisma schema: ${shown(root, project.schema.path)} (${source})`];
  if (changes.length === 0) {
    lines.push(
      `Nothing to change: ${shown(root, plan.folder)}/ is a schema folder with durable.prisma (schema version ${plan.toVersion}) and partialIndexes enabled.`,
    );
  } else {
    lines.push(dryRun ? 'Dry run, nothing written. init would:' : 'Done:');
    for (const c of changes) lines.push(`  ${describeChange(root, c).replace(/\n/g, '\n  ')}`);
  }
  for (const n of notes) lines.push(`Note: ${n}`);
  lines.push('', changes.length === 0 ? 'If the tables are not migrated yet:' : dryRun ? 'After that:' : 'Next:', ...commands(plan));
  if (plan.fromVersion === null) {
    lines.push(
      '',
      'Then register the module in your AppModule (PrismaService: the provider of your PrismaClient):',
      "  import { DurableModule } from 'nestjs-durable';",
      '  @Module({ imports: [DurableModule.forRoot({ prisma: PrismaService }), …] })',
    );
  }
  return lines.join('\n');
}

function commands(plan: InitPlan): string[] {
  const upgrading = plan.fromVersion !== null && plan.fromVersion < plan.toVersion;
  const name = upgrading ? `durable_v${plan.toVersion}` : 'durable';
  const what = upgrading ? `brings the durable_* tables to schema version ${plan.toVersion}` : 'creates the durable_* tables';
  const migrate = `npx prisma migrate dev --name ${name}`;
  return [
    `  ${migrate}   # ${what} (production: npx prisma migrate deploy)`,
    `  ${'npx prisma generate'.padEnd(migrate.length)}   # the Durable* models in your Prisma client`,
  ];
}
