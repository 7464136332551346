import { ApiProperty } from './swagger.js';

export class SignalDto {
  @ApiProperty({ type: String }) name!: string;
  @ApiProperty({ type: String, nullable: true }) description!: string | null;
  @ApiProperty({
    type: String,
    description: "The signal's endpoint below the app's global prefix, e.g. durable/signals/refund.approval/:runId",
  })
  path!: string;
  @ApiProperty({ type: String, description: 'What its body must be' }) payload!: string;
  @ApiProperty({ type: Boolean, description: 'Whether guards decide who may send it' }) guarded!: boolean;
  @ApiProperty({ type: [String], description: 'The workflows that declare it (@Workflow({ signals }))' }) workflows!: string[];
}

export class SignalWaitDto {
  @ApiProperty({ type: String }) runId!: string;
  @ApiProperty({ type: String }) workflowName!: string;
  @ApiProperty({ type: String }) signal!: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) since!: string | null;
  @ApiProperty({ type: Boolean, description: "Whether the signal is in this app's option signals (else it has no endpoint here)" })
  declared!: boolean;
}

export class SignalListDto {
  @ApiProperty({ type: [SignalDto] }) signals!: SignalDto[];
  @ApiProperty({ type: [SignalWaitDto], description: 'Runs suspended waiting for a signal, newest first' }) waiting!: SignalWaitDto[];
  @ApiProperty({ type: Number, description: 'How many of the newest WAITING runs were looked at' }) scanned!: number;
  @ApiProperty({ type: String, description: "The admin API's path (the signals' paths are relative to the same root)" }) adminPath!: string;
}
