import { DuplicateWorkflowError, InvalidScheduleError, UnknownWorkflowError } from '../errors/index.js';
import type { WorkflowDefinition } from './definitions.js';
import { checkWorkflowOptions } from '../config/option-checks.js';
import { resolveScheduleSpec, type ScheduleSpec } from './schedule.js';

/** The workflows this process knows, by name (and by `Class.method`, an alias). */
export class WorkflowRegistry {
  private readonly byName = new Map<string, WorkflowDefinition>();
  private readonly aliases = new Map<string, string>();
  private readonly schedules = new Map<string, ScheduleSpec>();

  register(def: WorkflowDefinition): void {
    checkWorkflowOptions(`workflow ${where(def)}`, { ...def.options, name: def.name, queue: def.queue });
    const schedule = def.options.schedule;
    let spec: ScheduleSpec | null = null;
    if (schedule !== undefined) {
      const at = `workflow "${def.name}"${def.className ? ` (${def.className}.${def.methodName}())` : ''}`;
      if (!schedule || typeof schedule !== 'object' || Array.isArray(schedule)) {
        throw new InvalidScheduleError(at, 'schedule', String(schedule), 'must be an object { cron, timeZone?, catchUp?, overlap?, … }');
      }
      spec = resolveScheduleSpec(at, schedule as never, ['input']);
    }
    const existing = this.byName.get(def.name);
    if (existing) {
      throw new DuplicateWorkflowError(def.name, where(existing), where(def));
    }
    this.byName.set(def.name, def);
    if (spec) this.schedules.set(def.name, spec);
    if (def.className && def.methodName) this.aliases.set(`${def.className}.${def.methodName}`, def.name);
  }

  /** The definition for a name or `Class.method` alias; UnknownWorkflowError otherwise. */
  get(name: string): WorkflowDefinition {
    const def = this.byName.get(name) ?? this.byName.get(this.aliases.get(name) ?? '');
    if (!def) throw new UnknownWorkflowError(name, this.names());
    return def;
  }

  has(name: string): boolean {
    return this.byName.has(name) || this.aliases.has(name);
  }

  names(): string[] {
    return [...this.byName.keys()].sort();
  }

  all(): WorkflowDefinition[] {
    return [...this.byName.values()];
  }

  /** Workflows declaring a schedule, with their checked schedule (the schedule's id is the workflow's name). */
  declaredSchedules(): Array<{ def: WorkflowDefinition; spec: ScheduleSpec }> {
    return [...this.schedules].map(([name, spec]) => ({ def: this.byName.get(name)!, spec }));
  }

  /** Queues that registered workflows use (a worker serves these). */
  queues(): string[] {
    return [...new Set(this.all().map((d) => d.queue))];
  }
}

const where = (d: WorkflowDefinition) => (d.className ? `${d.className}.${d.methodName}()` : `"${d.name}"`);
