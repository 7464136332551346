import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { WorkflowClient } from 'nestjs-durable';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { chromiumAvailable } from '../support/chromium.js';
import { launchChromium } from '../admin/support/browser.js';
import { startExampleApp } from './support/example-app.js';

interface SseEvent {
  id?: string;
  type: string;
  data: string;
}

/** Reads a Server-Sent Events response to its end (the server closes it after `end`), parsed. */
async function readEvents(url: string, headers: Record<string, string> = {}): Promise<{ status: number; events: SseEvent[] }> {
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers } });
  const text = await res.text();
  const events = text
    .split('\n\n')
    .filter((block) => block.trim())
    .map((block) => {
      const e: SseEvent = { type: 'message', data: '' };
      for (const line of block.split('\n')) {
        const [field, ...rest] = line.split(':');
        const value = rest.join(':').replace(/^ /, '');
        if (field === 'id') e.id = value;
        else if (field === 'event') e.type = value;
        else if (field === 'data') e.data += value;
      }
      return e;
    });
  return { status: res.status, events };
}

/**
 * The example's shop assistant: POST /assistant/questions starts answerQuestion, whose step writes
 * the answer token by token to the run's stream; GET …/answer serves it as Server-Sent Events,
 * resumable with Last-Event-ID; GET /assistant is a page that shows it growing in a real browser.
 */
describe('example shop: an answer streamed to the client while the workflow writes it', () => {
  let db: TestDatabase;
  let app: INestApplication;
  let base: string;
  beforeAll(async () => {
    db = await createTestDatabase('example_assistant');
    app = await startExampleApp(db.url);
    await app.listen(0, '127.0.0.1');
    base = await app.getUrl();
    base = base.replace('[::1]', '127.0.0.1');
  });
  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('streams the answer as events while the run works, and resumes after Last-Event-ID', async () => {
    const asked = await request(app.getHttpServer()).post('/assistant/questions').send({ question: 'Do you have grinders?' }).expect(202);
    const { runId, events } = asked.body as { runId: string; events: string };
    const live = await readEvents(base + events);
    expect(live.status).toBe(200);
    const tokens = live.events.filter((e) => e.type === 'message');
    expect(tokens.map((e) => e.id)).toEqual(tokens.map((_, i) => String(i)));
    const text = tokens.map((e) => JSON.parse(e.data) as string).join('');
    expect(text).toContain('You asked: "Do you have grinders?". grinder: 25 in stock.');
    expect(live.events[live.events.length - 1]).toEqual({
      id: String(tokens.length - 1),
      type: 'end',
      data: JSON.stringify({ status: 'SUCCEEDED' }),
    });
    // The run's output is the same answer.
    const run = await app.get(WorkflowClient).getRun(runId);
    expect(run?.output).toEqual({ answer: text });

    // A reconnecting EventSource sends the last id it got: the rest, nothing twice.
    const resumed = await readEvents(base + events, { 'last-event-id': '4' });
    const rest = resumed.events.filter((e) => e.type === 'message');
    expect(rest[0].id).toBe('5');
    expect(rest.map((e) => JSON.parse(e.data) as string).join('')).toBe(
      tokens
        .slice(5)
        .map((e) => JSON.parse(e.data) as string)
        .join(''),
    );
  });

  it("the admin API and the dashboard's Streams tab show the run's stream", async () => {
    const asked = await request(app.getHttpServer()).post('/assistant/questions').send({ question: 'mugs?' }).expect(202);
    const runId = (asked.body as { runId: string }).runId;
    await app.get(WorkflowClient).handle(runId).result({ timeoutMs: 20_000 });
    const admin = (path: string) => request(app.getHttpServer()).get(path).set('authorization', 'Bearer test-admin-token');
    const list = await admin(`/durable/runs/${runId}/streams`).expect(200);
    expect(list.body.streams).toEqual([{ stream: 'answer', chunks: expect.any(Number), ended: false, lastWrittenAt: expect.any(String) }]);
    const chunks = list.body.streams[0].chunks as number;
    const page = await admin(`/durable/runs/${runId}/streams/answer?from=${chunks - 2}&limit=5`).expect(200);
    expect(page.body).toMatchObject({ runId, stream: 'answer', runStatus: 'SUCCEEDED', nextFrom: chunks, ended: true });
    expect(page.body.chunks).toEqual([
      { position: chunks - 2, value: 'Anything ' },
      { position: chunks - 1, value: 'else?' },
    ]);
    await admin(`/durable/runs/${runId}/streams/answer?from=-1`).expect(400);
    await admin(`/durable/runs/no-such-run/streams`).expect(404);
    await request(app.getHttpServer()).get(`/durable/runs/${runId}/streams`).expect(401);

    if (!chromiumAvailable('the Streams tab of the dashboard')) return;
    const browser = await launchChromium();
    try {
      const tab = await browser.newPage();
      await tab.addInitScript("sessionStorage.setItem('nestjs-durable.token', 'test-admin-token')");
      await tab.goto(`${base}/durable/`);
      await tab.click(`tr[data-run="${runId}"] td.id`);
      await tab.click('button[data-tab="streams"]');
      const stream = tab.locator('#run-streams [data-stream="answer"]');
      await stream.waitFor();
      expect(await stream.innerText()).toContain(`${chunks} chunks, ended with the run`);
      expect(await stream.innerText()).toContain('else?');
    } finally {
      await browser.close();
    }
  });

  it('refuses what it cannot serve: a bad question (400), another workflow run or none (404)', async () => {
    await request(app.getHttpServer()).post('/assistant/questions').send({ question: '' }).expect(400);
    expect((await readEvents(`${base}/assistant/questions/no-such-run/answer`)).status).toBe(404);
    const other = await request(app.getHttpServer()).post('/reports').send({ day: '2026-01-02' }).expect(202);
    expect((await readEvents(`${base}/assistant/questions/${other.body.runId}/answer`)).status).toBe(404);
    const asked = await request(app.getHttpServer()).post('/assistant/questions').send({ question: 'kettle?' }).expect(202);
    expect((await readEvents(base + asked.body.events, { 'last-event-id': 'yesterday' })).status).toBe(400);
  });

  it('in a browser: the page shows the answer growing, then the run succeeded', async () => {
    if (!chromiumAvailable('the assistant page')) return;
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(`${base}/assistant`);
      await page.fill('#question', 'Is the vintage kettle available?');
      await page.click('button');
      // Part of the answer is on the page before the run ends (tokens arrive every 40 ms).
      await page.waitForFunction(() => {
        const text = (globalThis as any).document.getElementById('answer').textContent as string;
        return text.length > 0 && !text.includes('Anything else?');
      });
      await page.waitForFunction(() => ((globalThis as any).document.getElementById('status').textContent as string).endsWith('SUCCEEDED'));
      expect(await page.textContent('#answer')).toContain('vintage-kettle: sold out for now. Anything else?');
    } finally {
      await browser.close();
    }
  });
});
