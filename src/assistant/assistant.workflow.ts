import { Inject, Injectable } from '@nestjs/common';
import { Durable, Step, Workflow } from 'nestjs-durable';
import { PrismaService } from '../prisma/prisma.service.js';
import { fakeModel, type StockFact } from './fake-model.js';

/** The name of the stream the answer is written to, token by token. */
export const ANSWER_STREAM = 'answer';

@Injectable()
export class AssistantSteps {
  constructor(@Inject(PrismaService) private readonly prisma: PrismaService) {}

  /** What the answer may say, read once (checkpointed: a retry of compose sees the same facts). */
  @Step()
  async stockFacts(): Promise<StockFact[]> {
    const rows = await this.prisma.stock.findMany({ orderBy: { sku: 'asc' } });
    return rows.map((r) => ({ sku: r.sku, available: r.available }));
  }

  /**
   * Asks the model and writes each token to the run's stream as it arrives: readers (the browser,
   * through Server-Sent Events) see the answer grow. A retried attempt does not store again the
   * tokens an earlier attempt stored, it goes on after them.
   */
  @Step({ retries: { maxAttempts: 3, initialDelayMs: 200 } })
  async compose(question: string, facts: StockFact[]): Promise<string> {
    const answer = Durable.stream<string>(ANSWER_STREAM);
    let text = '';
    for await (const token of fakeModel(question, facts)) {
      await answer.write(token);
      text += token;
    }
    return text;
  }
}

/** The shop assistant: answers a question about the stock, streaming the answer while it is written. */
@Injectable()
export class AssistantWorkflow {
  constructor(@Inject(AssistantSteps) private readonly steps: AssistantSteps) {}

  @Workflow({ name: 'answerQuestion' })
  async answer(input: { question: string }): Promise<{ answer: string }> {
    const facts = await this.steps.stockFacts();
    return { answer: await this.steps.compose(input.question, facts) };
  }
}
