/** Response shapes of the admin API's flow-control routes (OpenAPI). */
import { ApiProperty } from './swagger.js';

export class RateLimitDto {
  @ApiProperty({ type: Number, description: '1..10000 starts' }) limit!: number;
  @ApiProperty({ type: Number, description: 'in any window of this many ms (1..86400000)' }) periodMs!: number;
}

export class QueueLimitsDto {
  @ApiProperty({ type: String }) queue!: string;
  @ApiProperty({ type: Number, nullable: true, description: 'Runs of the queue executing at once across all instances; null = no limit' })
  globalConcurrency!: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'Runs of one concurrency key executing at once; null = no limit' })
  keyConcurrency!: number | null;
  @ApiProperty({ type: RateLimitDto, nullable: true, description: 'At most limit runs of the queue start in any periodMs; null = none' })
  rateLimit!: RateLimitDto | null;
  @ApiProperty({ type: RateLimitDto, nullable: true, description: 'At most limit runs of one concurrency key start in any periodMs' })
  keyRateLimit!: RateLimitDto | null;
  @ApiProperty({ enum: ['declared', 'runtime'], description: 'declared: from the queues option at boot; runtime: set through the API' })
  source!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) updatedAt!: string | null;
}

export class QueueLimitsUsageDto extends QueueLimitsDto {
  @ApiProperty({ type: Number, description: 'Runs of the queue executing now' }) running!: number;
  @ApiProperty({ type: Number, description: 'Due runs waiting to be claimed (counted up to 100,000)' }) due!: number;
  @ApiProperty({ type: Number, description: "Starts in the queue's rate window now" }) rateUsed!: number;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description: 'When the full rate window has room again; null: room now',
  })
  rateLimitedUntil!: string | null;
}

export class DebouncedRunDto {
  @ApiProperty({ type: String }) workflow!: string;
  @ApiProperty({ type: String, description: 'Debounce key' }) key!: string;
  @ApiProperty({ type: String }) runId!: string;
  @ApiProperty({ type: String, format: 'date-time', description: 'Starts then unless another start with the key pushes it' })
  startsAt!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'The latest it can be pushed to' }) latestStart!:
    string | null;
}

export class SingletonRunDto {
  @ApiProperty({ type: String }) workflow!: string;
  @ApiProperty({ type: String, description: 'Dedupe key' }) key!: string;
  @ApiProperty({ type: String }) runId!: string;
  @ApiProperty({ type: String }) status!: string;
  @ApiProperty({ type: String, format: 'date-time' }) createdAt!: string;
}

export class FlowDto {
  @ApiProperty({ type: [QueueLimitsUsageDto], description: 'Every queue with cluster-wide limits' }) queues!: QueueLimitsUsageDto[];
  @ApiProperty({ type: [DebouncedRunDto], description: 'Runs waiting out a debounce, soonest first (at most 50)' })
  debounced!: DebouncedRunDto[];
  @ApiProperty({ type: [SingletonRunDto], description: 'Active runs holding a dedupe key, newest first (at most 50)' })
  singletons!: SingletonRunDto[];
}

export class KeyUsageDto {
  @ApiProperty({ type: String }) key!: string;
  @ApiProperty({ type: Number, description: 'Runs of the key executing now' }) running!: number;
  @ApiProperty({ type: Number, description: 'Due runs of the key waiting' }) due!: number;
  @ApiProperty({ type: Number, description: "Starts in the key's rate window now (with a keyRateLimit)" }) rateUsed!: number;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) rateLimitedUntil!: string | null;
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
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: "When the queue's full rate window has room again" })
  rateLimitedUntil!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: "When the key's full rate window has room again" })
  keyRateLimitedUntil!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Debounce key of a run that has not started' }) debounceKey!: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) debounceUntil!: string | null;
}

/** A partial update: absent fields stay as they are, null removes that limit. */
export class QueueLimitsBodyDto {
  @ApiProperty({ type: Number, nullable: true, required: false, description: '1..1000000, or null for no limit; absent: unchanged' })
  globalConcurrency?: number | null;
  @ApiProperty({ type: Number, nullable: true, required: false, description: '1..1000000, or null for no limit; absent: unchanged' })
  keyConcurrency?: number | null;
  @ApiProperty({
    type: RateLimitDto,
    nullable: true,
    required: false,
    description: '{ limit, periodMs }, or null for no rate limit; absent: unchanged',
  })
  rateLimit?: RateLimitDto | null;
  @ApiProperty({
    type: RateLimitDto,
    nullable: true,
    required: false,
    description: 'Per concurrency key; null for none; absent: unchanged',
  })
  keyRateLimit?: RateLimitDto | null;
}
