import { ApiProperty } from './swagger.js';

export class StreamSummaryDto {
  @ApiProperty({ type: String }) stream!: string;
  @ApiProperty({ type: Number, description: 'Chunks written' }) chunks!: number;
  @ApiProperty({ type: Boolean, description: 'Closed by the run (a run that ended ends its streams too)' }) ended!: boolean;
  @ApiProperty({ type: String, format: 'date-time' }) lastWrittenAt!: string;
}

export class StreamListDto {
  @ApiProperty({ type: String }) runId!: string;
  @ApiProperty({ type: [StreamSummaryDto] }) streams!: StreamSummaryDto[];
}

export class StreamChunkDto {
  @ApiProperty({ type: Number, description: 'Its place in the stream: 0, 1, 2…' }) position!: number;
  @ApiProperty({ description: 'The value as stored (JSON; dates, bigints… in the codec form)' }) value!: unknown;
}

export class StreamPageDto {
  @ApiProperty({ type: String }) runId!: string;
  @ApiProperty({ type: String }) stream!: string;
  @ApiProperty({ type: String }) runStatus!: string;
  @ApiProperty({ type: [StreamChunkDto] }) chunks!: StreamChunkDto[];
  @ApiProperty({ type: Number, description: 'Pass as from for the next page' }) nextFrom!: number;
  @ApiProperty({ type: Boolean, description: 'No chunk will follow: the stream was closed, or the run ended' }) ended!: boolean;
}
