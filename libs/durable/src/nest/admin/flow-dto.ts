/** Response shapes of the admin API's flow-control routes (OpenAPI). */
import { ApiProperty } from './swagger.js';

export class QueueLimitsDto {
  @ApiProperty({ type: String }) queue!: string;
  @ApiProperty({ type: Number, nullable: true, description: 'Runs of the queue executing at once across all instances; null = no limit' })
  globalConcurrency!: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'Runs of one concurrency key executing at once; null = no limit' })
  keyConcurrency!: number | null;
  @ApiProperty({ enum: ['declared', 'runtime'], description: 'declared: from the queues option at boot; runtime: set through the API' })
  source!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) updatedAt!: string | null;
}

export class QueueLimitsUsageDto extends QueueLimitsDto {
  @ApiProperty({ type: Number, description: 'Runs of the queue executing now' }) running!: number;
  @ApiProperty({ type: Number, description: 'Due runs waiting to be claimed (counted up to 100,000)' }) due!: number;
}

export class FlowDto {
  @ApiProperty({ type: [QueueLimitsUsageDto], description: 'Every queue with cluster-wide limits' }) queues!: QueueLimitsUsageDto[];
}

export class KeyUsageDto {
  @ApiProperty({ type: String }) key!: string;
  @ApiProperty({ type: Number, description: 'Runs of the key executing now' }) running!: number;
  @ApiProperty({ type: Number, description: 'Due runs of the key waiting' }) due!: number;
}

export class FlowKeysDto {
  @ApiProperty({ type: String }) queue!: string;
  @ApiProperty({ type: [KeyUsageDto], description: 'Most executing first' }) keys!: KeyUsageDto[];
}

export class QueueLimitsResetDto {
  @ApiProperty({ type: String }) queue!: string;
  @ApiProperty({ type: QueueLimitsDto, nullable: true, description: 'The declared limits now in force; null: none' })
  limits!: QueueLimitsDto | null;
}

export class StartBlockersDto {
  @ApiProperty({ type: String }) runId!: string;
  @ApiProperty({ type: String }) status!: string;
  @ApiProperty({ type: String }) queue!: string;
  @ApiProperty({ type: String, nullable: true }) concurrencyKey!: string | null;
  @ApiProperty({
    type: [String],
    description: 'What holds the run back, e.g. "concurrency key tenant-a: 5/5", "not due until …"; empty when nothing does',
  })
  reasons!: string[];
  @ApiProperty({ type: Boolean, description: 'Due and within every limit: the next worker of its queue with a free slot takes it' })
  claimable!: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) availableAt!: string | null;
  @ApiProperty({ type: Number }) queueRunning!: number;
  @ApiProperty({ type: Number, nullable: true }) globalConcurrency!: number | null;
  @ApiProperty({ type: Number }) keyRunning!: number;
  @ApiProperty({ type: Number, nullable: true }) keyConcurrency!: number | null;
}

export class QueueLimitsBodyDto {
  @ApiProperty({ type: Number, nullable: true, required: false, description: '1..1000000, or null for no limit' })
  globalConcurrency?: number | null;
  @ApiProperty({ type: Number, nullable: true, required: false, description: '1..1000000, or null for no limit' })
  keyConcurrency?: number | null;
}
