import {
  BadRequestException,
  Body,
  Controller,
  Get,
  Header,
  Headers,
  HttpCode,
  Inject,
  NotFoundException,
  Param,
  Post,
  Sse,
  type MessageEvent,
} from '@nestjs/common';
import { InvalidArgumentError, WorkflowClient } from 'nestjs-durable';
import type { Observable } from 'rxjs';
import { ASSISTANT_PAGE } from './assistant-page.js';
import { ANSWER_STREAM } from './assistant.workflow.js';

@Controller('assistant')
export class AssistantController {
  constructor(@Inject(WorkflowClient) private readonly workflows: WorkflowClient) {}

  /** GET /assistant: a page to ask a question and watch the answer stream in. */
  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  page(): string {
    return ASSISTANT_PAGE;
  }

  /** POST /assistant/questions { question } → 202 { runId, events }: events is the answer's Server-Sent Events URL. */
  @Post('questions')
  @HttpCode(202)
  async ask(@Body() body: unknown) {
    const question = (body as { question?: unknown } | null)?.question;
    if (typeof question !== 'string' || !question.trim() || question.length > 500)
      throw new BadRequestException('send { "question": "…" } (1 to 500 characters)');
    const run = await this.workflows.start('answerQuestion', { question });
    return { runId: run.id, events: `/assistant/questions/${encodeURIComponent(run.id)}/answer` };
  }

  /**
   * GET /assistant/questions/:runId/answer: the answer as Server-Sent Events, one per token (its id
   * is the token's position: a reconnecting EventSource sends Last-Event-ID and resumes after it),
   * then `end`. Only the streams of answerQuestion runs are served here (put your guards on it).
   */
  @Sse('questions/:runId/answer')
  async answer(@Param('runId') runId: string, @Headers('last-event-id') lastEventId?: string): Promise<Observable<MessageEvent>> {
    const run = await this.workflows.getRun(runId);
    if (run?.workflowName !== 'answerQuestion') throw new NotFoundException(`no question ${runId}`);
    try {
      return this.workflows.streamEvents<string>(runId, ANSWER_STREAM, { lastEventId });
    } catch (err) {
      if (err instanceof InvalidArgumentError) throw new BadRequestException(err.message); // a Last-Event-ID that is no position
      throw err;
    }
  }
}
