/** OpenAPI shapes of the operations endpoints: bulk actions, live updates, charts. */
import { ApiProperty, ApiPropertyOptional } from './swagger.js';

const actions = ['cancel', 'resume', 'retry', 'delete'];

export class BulkPreviewBodyDto {
  @ApiProperty({
    enum: actions,
    description: 'cancel (unfinished runs), resume (FAILED/CANCELLED), retry (FAILED, from the failed step), delete (finished runs)',
  })
  action!: string;
  @ApiPropertyOptional({
    type: Object,
    description:
      'The runs list filter: status, workflow, queue, createdFrom, createdTo, finishedFrom, finishedTo, idPrefix, parentId, tag, input',
  })
  filter?: Record<string, string | string[]>;
  @ApiPropertyOptional({ type: Boolean, description: 'cancel only: undo what each run did first' }) compensate?: boolean;
}

export class BulkPreviewDto {
  @ApiProperty({ enum: actions }) action!: string;
  @ApiProperty({ type: Number, description: 'Runs the action would change now' }) matched!: number;
  @ApiProperty({ type: Boolean, description: 'A status had more than 10,000 matching runs: matched is a lower bound' }) capped!: boolean;
  @ApiProperty({ type: Object, description: 'matched per status' }) byStatus!: Record<string, number>;
  @ApiProperty({ type: String, format: 'date-time', description: 'Runs created after this are never touched' }) asOf!: string;
  @ApiProperty({ type: String, description: 'Send it to POST runs/bulk/execute to confirm' }) token!: string;
}

export class BulkExecuteBodyDto {
  @ApiProperty({ type: String, description: 'The preview token, then the token of the previous batch' }) token!: string;
  @ApiPropertyOptional({ type: Number, description: 'Runs in this batch, 1..1000, default 200' }) batchSize?: number;
  @ApiPropertyOptional({ enum: actions, description: 'Refuse the token unless it confirms this action' }) action?: string;
}

export class BulkSkippedDto {
  @ApiProperty({ type: String }) id!: string;
  @ApiProperty({ type: String }) reason!: string;
}

export class BulkBatchCountsDto {
  @ApiProperty({ type: Number }) done!: number;
  @ApiProperty({ type: Number }) skipped!: number;
}

export class BulkExecuteDto {
  @ApiProperty({ enum: actions }) action!: string;
  @ApiProperty({ type: Number, description: 'matched at the preview' }) matched!: number;
  @ApiProperty({ type: BulkBatchCountsDto, description: 'This batch' }) batch!: BulkBatchCountsDto;
  @ApiProperty({ type: Number, description: 'Changed so far' }) done!: number;
  @ApiProperty({ type: Number, description: 'Skipped so far (their status changed meanwhile)' }) skipped!: number;
  @ApiProperty({ type: [BulkSkippedDto], description: 'The first 20 runs this batch skipped, with why' }) skippedRuns!: BulkSkippedDto[];
  @ApiProperty({ type: Boolean }) complete!: boolean;
  @ApiProperty({ type: String, nullable: true, description: 'Send it back for the next batch; null when complete' }) token!: string | null;
}

export class ChartBucketDto {
  @ApiProperty({ type: String, format: 'date-time', description: 'Start of the bucket' }) at!: string;
  @ApiProperty({ type: Number }) started!: number;
  @ApiProperty({ type: Number }) succeeded!: number;
  @ApiProperty({ type: Number }) failed!: number;
  @ApiProperty({ type: Number }) cancelled!: number;
}

export class ChartsDto {
  @ApiProperty({ enum: ['1h', '24h', '7d'] }) range!: string;
  @ApiProperty({ type: Number }) bucketMs!: number;
  @ApiProperty({ type: [ChartBucketDto] }) buckets!: ChartBucketDto[];
}
