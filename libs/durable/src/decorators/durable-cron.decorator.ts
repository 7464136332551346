import 'reflect-metadata';
import type { WorkflowOptions } from '../definitions/definitions.js';
import type { WorkflowScheduleOptions } from '../definitions/schedule.js';
import { Workflow } from './workflow.decorator.js';

/** Options of @DurableCron(): the schedule's (time zone, policies, input) and the workflow's (name, queue, …). */
export type DurableCronOptions = Omit<WorkflowScheduleOptions, 'cron'> & Omit<WorkflowOptions, 'schedule'>;

/**
 * `@Cron()` of @nestjs/schedule, once per cluster: the method becomes a workflow started on each
 * slot of `cron` by exactly one instance (not by every replica), with missed-slot and overlap
 * policies. Replace `@Cron(expr, { timeZone })` by `@DurableCron(expr, { timeZone })`; the
 * expression means the same (the same cron package reads it). Shorthand for
 * `@Workflow({ name, schedule: { cron, ... } })`; the run's input is a ScheduledInput.
 */
export function DurableCron(cron: string, options: DurableCronOptions = {}): MethodDecorator {
  const { name, queue, timeoutMs, priority, ...schedule } = options ?? {};
  const workflow: WorkflowOptions = { schedule: { ...schedule, cron } };
  if (name !== undefined) workflow.name = name;
  if (queue !== undefined) workflow.queue = queue;
  if (timeoutMs !== undefined) workflow.timeoutMs = timeoutMs;
  if (priority !== undefined) workflow.priority = priority;
  return Workflow(workflow);
}
