/** OpenAPI shapes of the schedule routes' bodies (create, update) and of a deletion. */
import { ApiProperty, ApiPropertyOptional } from './swagger.js';

const cron = 'Cron expression: 5 fields (minute first) or 6 (seconds first), presets (@daily), names (MON, JAN)';
const input = { description: 'JSON passed to every run as input (next to scheduleId and scheduledAt)' };

export class ScheduleCreateBodyDto {
  @ApiProperty({ type: String, description: 'Unique, 1..200 characters, no control characters; runs are sched:<id>:<slot>' }) id!: string;
  @ApiProperty({ type: String, description: 'A workflow registered in the instance that answers (else 400)' }) workflow!: string;
  @ApiProperty({ type: String, description: cron, example: '0 3 * * *' }) cron!: string;
  @ApiPropertyOptional({ type: String, description: 'IANA time zone, default UTC', example: 'Europe/Paris' }) timeZone?: string;
  @ApiPropertyOptional(input) input?: unknown;
  @ApiPropertyOptional({ enum: ['skip', 'latest', 'all'], description: 'Slots missed during downtime (default latest)' }) catchUp?: string;
  @ApiPropertyOptional({ type: Number, description: 'catchUp all: missed slots at most this old run (default one day)' })
  catchUpWindowMs?: number;
  @ApiPropertyOptional({ enum: ['skip', 'allow', 'bufferOne'], description: 'A slot while the previous run is active (default skip)' })
  overlap?: string;
  @ApiPropertyOptional({ type: Number, description: 'Each run is claimable at a random moment up to this long after its slot (default 0)' })
  jitterMs?: number;
  @ApiPropertyOptional({ type: Boolean, description: 'Create it paused (default false)' }) paused?: boolean;
}

export class ScheduleUpdateBodyDto {
  @ApiPropertyOptional({ type: String, description: 'A registered workflow' }) workflow?: string;
  @ApiPropertyOptional({ type: String, description: `${cron}; a new cron or time zone starts from the first slot after now` })
  cron?: string;
  @ApiPropertyOptional({ type: String }) timeZone?: string;
  @ApiPropertyOptional(input) input?: unknown;
  @ApiPropertyOptional({ enum: ['skip', 'latest', 'all'] }) catchUp?: string;
  @ApiPropertyOptional({ type: Number }) catchUpWindowMs?: number;
  @ApiPropertyOptional({ enum: ['skip', 'allow', 'bufferOne'] }) overlap?: string;
  @ApiPropertyOptional({ type: Number }) jitterMs?: number;
}

export class ScheduleDeletedDto {
  @ApiProperty({ type: String }) id!: string;
  @ApiProperty({ type: Boolean, enum: [true] }) deleted!: boolean;
}
