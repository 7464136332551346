import { ApiProperty } from './swagger.js';

export class BackfillDto {
  @ApiProperty({ type: String, description: 'The run of the backfill' }) runId!: string;
  @ApiProperty({ type: String }) workflowName!: string;
  @ApiProperty({ type: String, description: 'The run status (a paused backfill is WAITING)' }) status!: string;
  @ApiProperty({ type: String, format: 'date-time' }) createdAt!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) finishedAt!: string | null;
  @ApiProperty({ type: Number, description: 'Rows done (counted, for a dry run)' }) done!: number;
  @ApiProperty({ type: Number, nullable: true, description: 'Rows to do, estimated at the start' }) estimated!: number | null;
  @ApiProperty({ type: Number }) batches!: number;
  @ApiProperty({ type: Boolean }) dryRun!: boolean;
  @ApiProperty({ type: Boolean }) paused!: boolean;
  @ApiProperty({ type: Number, nullable: true, description: 'Rows per second since it began' }) rowsPerSecond!: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'Seconds left at that rate' }) etaSeconds!: number | null;
  @ApiProperty({ type: String, format: 'date-time', description: 'Its latest progress report' }) reportedAt!: string;
}

export class BackfillListDto {
  @ApiProperty({ type: [BackfillDto], description: 'Newest first' }) backfills!: BackfillDto[];
}

export class BackfillControlDto {
  @ApiProperty({ type: String }) id!: string;
  @ApiProperty({ type: Boolean, description: 'What was asked: it pauses after its current batch' }) paused!: boolean;
}
