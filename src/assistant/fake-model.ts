import { setTimeout as delay } from 'node:timers/promises';

/** What the shop knows when it answers: its stock, by product. */
export interface StockFact {
  sku: string;
  available: number;
}

/**
 * A stand-in for a language model that streams its answer token by token (a real one would be an
 * HTTP call to a model provider). It is deterministic: the same question and facts give the same
 * tokens, which is what lets a retried step go on from the tokens an earlier attempt already stored.
 */
export async function* fakeModel(question: string, facts: StockFact[], msPerToken = 40): AsyncGenerator<string> {
  const wanted = facts.filter((f) => question.toLowerCase().includes(f.sku.split('-')[0]));
  const about = wanted.length ? wanted : facts;
  const lines = about.map((f) => (f.available > 0 ? `${f.sku}: ${f.available} in stock.` : `${f.sku}: sold out for now.`));
  const text = `You asked: "${question.trim()}". ${lines.join(' ')} Anything else?`;
  for (const token of text.split(/(?<= )/)) {
    await delay(msPerToken);
    yield token;
  }
}
