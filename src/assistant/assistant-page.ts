/**
 * GET /assistant: a page that asks the assistant a question and shows the answer as it streams in,
 * with the browser's own EventSource (which reconnects by itself, resuming after the last event id).
 */
export const ASSISTANT_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Shop assistant</title>
<style>body{font:16px system-ui,sans-serif;max-width:40rem;margin:3rem auto}#answer{white-space:pre-wrap;min-height:3rem;border:1px solid #ccc;padding:1rem}input{width:70%}</style></head>
<body>
<h1>Shop assistant</h1>
<form id="ask"><input id="question" value="Do you have grinders?" aria-label="Question"> <button>Ask</button></form>
<p id="status"></p>
<div id="answer" aria-live="polite"></div>
<script>
document.getElementById('ask').addEventListener('submit', async (e) => {
  e.preventDefault();
  const answer = document.getElementById('answer');
  const status = document.getElementById('status');
  answer.textContent = '';
  const res = await fetch('/assistant/questions', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ question: document.getElementById('question').value }),
  });
  const { runId, events } = await res.json();
  status.textContent = 'Run ' + runId + ': answering…';
  const source = new EventSource(events);
  source.onmessage = (m) => { answer.textContent += JSON.parse(m.data); };
  source.addEventListener('end', (m) => { status.textContent = 'Run ' + runId + ': ' + JSON.parse(m.data).status; source.close(); });
  source.addEventListener('stream-error', (m) => { status.textContent = JSON.parse(m.data).message; source.close(); });
});
</script>
</body>
</html>
`;
