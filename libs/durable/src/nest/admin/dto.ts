/**
 * Response shapes of the admin API, for its OpenAPI description (the service builds plain
 * objects of these shapes). Field types are given explicitly: nothing here depends on the
 * app's swagger CLI plugin.
 */
import { RUN_STATUSES } from '../../store/rows.js';
import { ApiProperty, ApiPropertyOptional } from './swagger.js';
import { StartBlockersDto } from './flow-dto.js';
import { ProgressDto, StepDto } from './step-dto.js';

const statuses = [...RUN_STATUSES];
const json = { description: 'Stored JSON (values JSON cannot hold are tagged: { "$durable": "Date", "v": … })', nullable: true };

export class RunCountsDto {
  @ApiProperty({ type: Number }) PENDING!: number;
  @ApiProperty({ type: Number }) RUNNING!: number;
  @ApiProperty({ type: Number }) WAITING!: number;
  @ApiProperty({ type: Number }) SUCCEEDED!: number;
  @ApiProperty({ type: Number }) FAILED!: number;
  @ApiProperty({ type: Number }) CANCELLED!: number;
}

export class RunListItemDto {
  @ApiProperty({ type: String }) id!: string;
  @ApiProperty({ type: String }) workflowName!: string;
  @ApiProperty({ type: String }) queue!: string;
  @ApiProperty({ enum: statuses }) status!: string;
  @ApiProperty({ type: Number }) priority!: number;
  @ApiProperty({ type: Number, description: 'Times the run was claimed' }) attempt!: number;
  @ApiProperty({ type: String, nullable: true }) parentId!: string | null;
  @ApiProperty({ type: String, nullable: true }) appVersion!: string | null;
  @ApiProperty({ type: String, nullable: true }) leaseOwner!: string | null;
  @ApiProperty({ type: String, nullable: true }) errorMessage!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Start of the output JSON (160 characters; its size when over 2 kB)' })
  outputSummary!: string | null;
  @ApiProperty({
    type: 'array',
    nullable: true,
    items: { type: 'object', properties: { seq: { type: 'number' }, kind: { type: 'string' }, key: { type: 'string', nullable: true } } },
    description:
      'A WAITING run: what it waits for, from its latest suspension (kind sleep | recv | child; key: the topic or the child run id); else null',
  })
  waits!: Array<{ seq: number; kind: string; key: string | null }> | null;
  @ApiProperty({ type: Number }) stepCount!: number;
  @ApiProperty({ type: String, format: 'date-time' }) createdAt!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) startedAt!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) finishedAt!: string | null;
  @ApiProperty({ type: String, format: 'date-time' }) updatedAt!: string;
  @ApiProperty({ type: String, format: 'date-time' }) availableAt!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) deadlineAt!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Set by cancel with compensate: true' })
  cancelRequestedAt!: string | null;
  @ApiProperty({ type: [String], description: 'Tags given at start' }) tags!: string[];
}

export class RunListDto {
  @ApiProperty({ type: [RunListItemDto] }) items!: RunListItemDto[];
  @ApiProperty({ type: String, nullable: true, description: 'Pass as `cursor` for the next page; null on the last page' }) nextCursor!:
    string | null;
  @ApiProperty({ type: Number }) limit!: number;
  @ApiProperty({ enum: ['created', 'updated'] }) sort!: string;
  @ApiProperty({ enum: ['desc', 'asc'] }) order!: string;
  @ApiProperty({
    type: RunCountsDto,
    description: 'Runs per status matching the other filters (status filter not applied), each at most countCap',
  })
  counts!: RunCountsDto;
  @ApiProperty({ enum: statuses, isArray: true, description: 'Statuses whose count reached countCap' }) countsCapped!: string[];
  @ApiProperty({ type: Number }) countCap!: number;
  @ApiProperty({
    type: Boolean,
    description: "The exact counts took longer than a second (a rare value among many runs): counts and total are the planner's estimates",
  })
  countsEstimated!: boolean;
  @ApiProperty({ type: Number, description: 'Sum of counts over the selected statuses' }) total!: number;
}

export class MessageDto {
  @ApiProperty({ type: String }) id!: string;
  @ApiProperty({ type: String }) topic!: string;
  @ApiPropertyOptional(json) payload?: unknown;
  @ApiProperty({ type: String, nullable: true }) idempotencyKey!: string | null;
  @ApiProperty({ type: String, format: 'date-time' }) createdAt!: string;
  @ApiProperty({ type: Number, nullable: true }) consumedSeq!: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) consumedAt!: string | null;
}

export class EventDto {
  @ApiProperty({ type: String }) key!: string;
  @ApiPropertyOptional(json) value?: unknown;
  @ApiProperty({ type: String, format: 'date-time' }) updatedAt!: string;
}

export class HistoryDto {
  @ApiProperty({ type: String }) id!: string;
  @ApiProperty({ type: String }) kind!: string;
  @ApiPropertyOptional(json) detail?: unknown;
  @ApiProperty({ type: String, format: 'date-time' }) at!: string;
}

export class ChildDto {
  @ApiProperty({ type: String }) id!: string;
  @ApiProperty({ type: String }) workflowName!: string;
  @ApiProperty({ enum: statuses }) status!: string;
  @ApiProperty({ type: String, format: 'date-time' }) createdAt!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) finishedAt!: string | null;
}

export class ChildGroupDto {
  @ApiProperty({ type: Number, description: "The parent's step that started the group (Durable.startChildren)" }) seq!: number;
  @ApiProperty({ type: String }) workflow!: string;
  @ApiProperty({ type: Number, description: 'Children the group has (created: written so far)' }) total!: number;
  @ApiProperty({ type: Number }) created!: number;
  @ApiProperty({ type: Number }) ended!: number;
  @ApiProperty({ type: Number }) succeeded!: number;
  @ApiProperty({ type: Number }) failed!: number;
  @ApiProperty({ type: Number }) cancelled!: number;
  @ApiProperty({ type: Number, description: 'The parent waits until this many ended (0: it does not wait on the group)' })
  waitingFor!: number;
}

export class RunDetailDto {
  @ApiProperty({ type: String }) id!: string;
  @ApiProperty({ type: String }) workflowName!: string;
  @ApiProperty({ type: String }) queue!: string;
  @ApiProperty({ enum: statuses }) status!: string;
  @ApiPropertyOptional(json) input?: unknown;
  @ApiPropertyOptional(json) output?: unknown;
  @ApiPropertyOptional(json) error?: unknown;
  @ApiProperty({ type: Number }) priority!: number;
  @ApiProperty({ type: Number }) attempt!: number;
  @ApiProperty({ type: Number }) leaseEpoch!: number;
  @ApiProperty({ type: String, nullable: true }) leaseOwner!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) leaseExpiresAt!: string | null;
  @ApiProperty({ type: String, nullable: true }) parentId!: string | null;
  @ApiProperty({ type: String, nullable: true }) appVersion!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) deadlineAt!: string | null;
  @ApiProperty({ type: String, format: 'date-time' }) availableAt!: string;
  @ApiProperty({ type: String, format: 'date-time' }) createdAt!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) startedAt!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) finishedAt!: string | null;
  @ApiProperty({ type: String, format: 'date-time' }) updatedAt!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Set by cancel with compensate: true' })
  cancelRequestedAt!: string | null;
  @ApiProperty({ type: [String], description: 'Tags given at start' }) tags!: string[];
  @ApiProperty({ type: ProgressDto, nullable: true, description: 'Live progress of the steps executing now (Durable.progress)' })
  progress!: ProgressDto | null;
  @ApiProperty({ type: String, nullable: true, description: 'W3C traceparent of the span active when the run was started (OpenTelemetry)' })
  traceparent!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Its trace id: find the run in your tracing backend' }) traceId!: string | null;
  @ApiProperty({ type: [StepDto], description: 'Timeline, by seq (first 2000)' }) steps!: StepDto[];
  @ApiProperty({ type: [MessageDto], description: 'Messages sent to the run (latest 500)' }) messages!: MessageDto[];
  @ApiProperty({ type: [EventDto], description: 'Events the run published (Durable.setEvent)' }) events!: EventDto[];
  @ApiProperty({ type: [HistoryDto], description: 'What happened to the run (latest 1000)' }) history!: HistoryDto[];
  @ApiProperty({ type: [ChildDto], description: 'Child runs (first 500)' }) children!: ChildDto[];
  @ApiProperty({ type: [ChildGroupDto], description: 'Groups of children it started (Durable.startChildren), with their counters' })
  groups!: ChildGroupDto[];
  @ApiProperty({ type: Object, description: 'Row counts of steps, messages, events, history, children' }) totals!: Record<string, number>;
  @ApiProperty({ type: String, format: 'date-time', description: 'Database clock' }) now!: string;
  @ApiProperty({ type: String, nullable: true, description: "Flow control: the run's concurrency key" }) concurrencyKey!: string | null;
  @ApiProperty({ type: StartBlockersDto, nullable: true, description: 'PENDING or WAITING: why it has not started' })
  startBlockers!: StartBlockersDto | null;
}

export class RunSummaryDto {
  @ApiProperty({ type: String }) id!: string;
  @ApiProperty({ type: String }) workflowName!: string;
  @ApiProperty({ enum: statuses }) status!: string;
  @ApiProperty({ type: String, format: 'date-time' }) updatedAt!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Set by cancel with compensate: true' })
  cancelRequestedAt!: string | null;
}

export class RunExportRunDto {
  @ApiProperty({ type: String }) id!: string;
  @ApiProperty({ type: String }) workflowName!: string;
  @ApiProperty({ enum: statuses }) status!: string;
  @ApiProperty({ description: 'The input as stored (codec form)', nullable: true }) input!: unknown;
  @ApiProperty({ nullable: true }) output!: unknown;
  @ApiProperty({ nullable: true }) error!: unknown;
  @ApiProperty({ type: String, nullable: true }) appVersion!: string | null;
  @ApiProperty({ type: String, format: 'date-time' }) createdAt!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) finishedAt!: string | null;
}

export class RunExportStepDto {
  @ApiProperty({ type: Number }) seq!: number;
  @ApiProperty({ type: String }) name!: string;
  @ApiProperty({ enum: ['SUCCEEDED', 'FAILED', 'WAITING'] }) status!: string;
  @ApiProperty({ nullable: true, description: 'As stored (codec form)' }) output!: unknown;
  @ApiProperty({ nullable: true }) error!: unknown;
  @ApiProperty({ type: Number }) attempts!: number;
  @ApiProperty({ nullable: true }) compensation!: unknown;
  @ApiProperty({ type: Number, nullable: true }) compensates!: number | null;
}

/** GET runs/:id/export: the run as recorded, for replayRun() of nestjs-durable/testing. */
export class RunExportDto {
  @ApiProperty({ enum: ['nestjs-durable.run/1'] }) format!: string;
  @ApiProperty({ type: String, format: 'date-time' }) exportedAt!: string;
  @ApiProperty({ type: RunExportRunDto }) run!: RunExportRunDto;
  @ApiProperty({ type: [RunExportStepDto] }) steps!: RunExportStepDto[];
}

export class CancelBodyDto {
  @ApiPropertyOptional({
    type: Boolean,
    description: 'Undo what the run did first: the compensations of its completed steps run, then it ends CANCELLED (default false)',
  })
  compensate?: boolean;
}

export class ForkBodyDto {
  @ApiProperty({
    type: Number,
    minimum: 0,
    description: 'Seq of the first step to execute again; checkpoints before it are copied (0 = from the start)',
  })
  fromStep!: number;
}

export class ForkResultDto {
  @ApiProperty({ type: String, description: 'Id of the new run' }) id!: string;
  @ApiProperty({ type: String }) forkedFrom!: string;
  @ApiProperty({ type: Number }) fromStep!: number;
  @ApiProperty({ type: Number }) copiedSteps!: number;
  @ApiProperty({ type: String }) workflowName!: string;
  @ApiProperty({ enum: ['PENDING'] }) status!: string;
}

export class MinuteDto {
  @ApiProperty({ type: String, format: 'date-time' }) minute!: string;
  @ApiProperty({ type: Number }) started!: number;
  @ApiProperty({ type: Number }) succeeded!: number;
  @ApiProperty({ type: Number }) failed!: number;
  @ApiProperty({ type: Number }) cancelled!: number;
}

export class StatsBlockDto {
  @ApiProperty({ type: RunCountsDto, description: 'Unfinished runs now; finished runs within windowMinutes' }) counts!: RunCountsDto;
  @ApiProperty({ type: Number, description: 'RUNNING runs whose lease expired (worker gone)' }) expiredLeases!: number;
  @ApiProperty({ type: Number, nullable: true, description: 'Age of the oldest run that is due and waiting for a worker' })
  oldestClaimableAgeMs!: number | null;
  @ApiProperty({ type: [MinuteDto], description: 'Last 60 minutes, oldest first' }) perMinute!: MinuteDto[];
}

export class StatsGroupDto extends StatsBlockDto {
  @ApiProperty({ type: String }) workflow!: string;
  @ApiProperty({ type: String }) queue!: string;
}

export class StatsDto {
  @ApiProperty({ type: String, format: 'date-time' }) generatedAt!: string;
  @ApiProperty({ type: Number }) windowMinutes!: number;
  @ApiProperty({ type: StatsBlockDto }) totals!: StatsBlockDto;
  @ApiProperty({ type: [StatsGroupDto] }) groups!: StatsGroupDto[];
}

export class WorkflowInfoDto {
  @ApiProperty({ type: String }) name!: string;
  @ApiProperty({ type: String }) queue!: string;
  @ApiProperty({ type: Number }) queueConcurrency!: number;
  @ApiProperty({ type: String, nullable: true }) className!: string | null;
  @ApiProperty({ type: String, nullable: true }) methodName!: string | null;
  @ApiProperty({ type: Object, description: '@Workflow() options' }) options!: Record<string, unknown>;
}

export class QueueInfoDto {
  @ApiProperty({ type: String }) name!: string;
  @ApiProperty({ type: Number }) concurrency!: number;
}

export class WorkflowsDto {
  @ApiProperty({ type: [WorkflowInfoDto] }) workflows!: WorkflowInfoDto[];
  @ApiProperty({ type: [QueueInfoDto] }) queues!: QueueInfoDto[];
}

export class VersionWorkflowDto {
  @ApiProperty({ type: String }) workflow!: string;
  @ApiProperty({ type: Number }) inFlight!: number;
}

export class VersionInFlightDto {
  @ApiProperty({ type: String, nullable: true, description: 'null: runs started without an app version' }) appVersion!: string | null;
  @ApiProperty({ type: Number }) inFlight!: number;
  @ApiProperty({ type: Number }) pending!: number;
  @ApiProperty({ type: Number }) running!: number;
  @ApiProperty({ type: Number }) waiting!: number;
  @ApiProperty({ type: [VersionWorkflowDto] }) workflows!: VersionWorkflowDto[];
  @ApiProperty({ type: String, format: 'date-time' }) oldestCreatedAt!: string;
}

export class VersionsDto {
  @ApiProperty({ type: String, nullable: true, description: "This instance's appVersion" }) appVersion!: string | null;
  @ApiProperty({ type: [String], nullable: true, description: 'Versions whose runs this instance claims (runVersions); null: every run' })
  claims!: string[] | null;
  @ApiProperty({ type: [VersionInFlightDto] }) versions!: VersionInFlightDto[];
}

export class ScheduleDto {
  @ApiProperty({ type: String }) id!: string;
  @ApiProperty({ type: String }) workflowName!: string;
  @ApiProperty({ enum: ['declared', 'runtime'], description: 'declared: on a workflow in code; runtime: created through the API' })
  source!: string;
  @ApiProperty({ type: String, description: 'Cron expression (5 fields, or 6 with seconds first)' }) cron!: string;
  @ApiProperty({ type: String }) timeZone!: string;
  @ApiPropertyOptional(json) input?: unknown;
  @ApiProperty({ enum: ['skip', 'latest', 'all'], description: 'Slots missed during downtime' }) catchUp!: string;
  @ApiProperty({ type: Number }) catchUpWindowMs!: number;
  @ApiProperty({ enum: ['skip', 'allow', 'bufferOne'], description: 'A slot while the previous run is active' }) overlap!: string;
  @ApiProperty({ type: Number }) jitterMs!: number;
  @ApiProperty({ type: Boolean }) paused!: boolean;
  @ApiProperty({ type: String, format: 'date-time', description: 'Next slot' }) nextFireAt!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'overlap bufferOne: the slot waiting for the active run' })
  bufferedSlot!: string | null;
  @ApiProperty({ type: String, nullable: true }) lastRunId!: string | null;
  @ApiProperty({ enum: statuses, nullable: true }) lastRunStatus!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Slot of the last run started' }) lastSlotAt!:
    string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'When the last run was started' }) lastFiredAt!:
    string | null;
  @ApiProperty({ type: String, format: 'date-time' }) createdAt!: string;
  @ApiProperty({ type: String, format: 'date-time' }) updatedAt!: string;
  @ApiProperty({ type: Boolean, description: 'This instance has the workflow (only those fire it)' }) registered!: boolean;
}

export class ScheduleListDto {
  @ApiProperty({ type: [ScheduleDto] }) items!: ScheduleDto[];
  @ApiProperty({ type: String, nullable: true, description: 'Pass as `after` for the next page; null on the last page' }) nextCursor!:
    string | null;
  @ApiProperty({ type: Number }) limit!: number;
}

export class ScheduleRunDto {
  @ApiProperty({ type: String }) id!: string;
  @ApiProperty({ enum: statuses }) status!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'The slot' }) scheduledAt!: string | null;
  @ApiProperty({ type: Boolean, description: 'Started by trigger' }) manual!: boolean;
  @ApiProperty({ type: String, format: 'date-time' }) createdAt!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) startedAt!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) finishedAt!: string | null;
}

export class ScheduleDetailDto extends ScheduleDto {
  @ApiProperty({ type: String, format: 'date-time', isArray: true, description: 'The next slots (none while paused)' }) upcoming!: string[];
  @ApiProperty({ type: [ScheduleRunDto], description: 'Latest runs, newest first' }) runs!: ScheduleRunDto[];
  @ApiProperty({ type: String, format: 'date-time', description: 'Database clock' }) now!: string;
}

export class TriggerResultDto {
  @ApiProperty({ type: String }) runId!: string;
  @ApiProperty({ enum: ['started', 'buffered', 'skipped'], description: 'Under the overlap policy' }) outcome!: string;
}

export class HookCursorDto {
  @ApiProperty({ type: String, description: 'The consumer (engine.onEvent consumer, or Class.method of @OnDurableEvent)' })
  consumer!: string;
  @ApiProperty({ type: String, description: 'The last history event delivered (durable_run_events.id)' }) lastEventId!: string;
  @ApiProperty({ type: String, nullable: true, description: 'The instance delivering to it now' }) owner!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) leaseExpiresAt!: string | null;
  @ApiProperty({ type: String, format: 'date-time' }) updatedAt!: string;
  @ApiProperty({ type: Number, description: 'History events after its cursor (counted up to 10 000): its backlog' }) behind!: number;
}

export class HookCursorsDto {
  @ApiProperty({ type: [HookCursorDto] }) consumers!: HookCursorDto[];
}

export class ErrorDto {
  @ApiProperty({ type: Number }) statusCode!: number;
  @ApiProperty({ type: String }) error!: string;
  @ApiProperty({ type: String }) message!: string;
  @ApiPropertyOptional({ type: String, description: 'The query parameter or body field at fault (400)' }) parameter?: string;
  @ApiPropertyOptional({ type: String, description: 'DurableError code (404, 409)' }) code?: string;
}
