/** Swagger models of a run's steps in the admin API (the run detail's `steps` and `progress`). */
import { ApiProperty, ApiPropertyOptional } from './swagger.js';

const json = { description: 'Stored JSON (values JSON cannot hold are tagged: { "$durable": "Date", "v": … })', nullable: true };

export class StepWaitDto {
  @ApiProperty({ enum: ['sleep', 'recv', 'child', 'group'] }) kind!: string;
  @ApiPropertyOptional({ type: String, description: 'recv: the topic it waits on' }) topic?: string;
  @ApiPropertyOptional({ type: String, description: 'child: the child run whose result it waits for' }) runId?: string;
  @ApiPropertyOptional({
    type: Number,
    description: "group: the step that started the group whose children it waits for (the run's groups)",
  })
  group?: number;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'sleep: wake time; recv: its timeout (null: none)' })
  until!: string | null;
}

export class StepDto {
  @ApiProperty({ type: Number }) seq!: number;
  @ApiProperty({ type: String }) name!: string;
  @ApiProperty({
    enum: ['SUCCEEDED', 'FAILED', 'WAITING', 'CANCELLED'],
    description:
      'WAITING: a durable wait not over yet (a sleep before its wake time, a recv or child result); CANCELLED: a wait the run ended during',
  })
  status!: string;
  @ApiProperty({ type: Number }) attempts!: number;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) startedAt!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'null while WAITING' }) finishedAt!: string | null;
  @ApiProperty({ type: Number, nullable: true }) durationMs!: number | null;
  @ApiPropertyOptional({ type: StepWaitDto, description: 'On a durable wait (sleep, recv, child result): what it waits for' })
  wait?: StepWaitDto;
  @ApiPropertyOptional({
    type: Boolean,
    description: 'Not a recorded step: a wait that records nothing until it ends, shown from the run history (its latest suspension)',
  })
  derived?: boolean;
  @ApiPropertyOptional(json) output?: unknown;
  @ApiPropertyOptional(json) error?: unknown;
  @ApiPropertyOptional({
    description: 'What undoes this step, recorded with it: { by: compensation name, args?: the step arguments }',
    nullable: true,
  })
  compensation?: unknown;
  @ApiProperty({ type: Number, nullable: true, description: 'On a compensation step: the seq of the step it undoes' })
  compensates!: number | null;
}

export class StepProgressDto {
  @ApiProperty({ type: Number }) seq!: number;
  @ApiProperty({ type: String }) step!: string;
  @ApiPropertyOptional({ description: 'The latest value the step passed to Durable.progress()', nullable: true }) value?: unknown;
}

export class ProgressDto {
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'When it was written (database clock)' })
  at!: string | null;
  @ApiProperty({ type: [StepProgressDto] }) steps!: StepProgressDto[];
}
