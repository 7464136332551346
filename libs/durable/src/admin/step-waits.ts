/**
 * The durable waits of a run as its detail shows them, derived from what the engine records
 * (nothing extra is written on the hot path):
 * - `durable.sleep` is recorded SUCCEEDED when the sleep starts, with its wake time as output: until
 *   then it shows WAITING, and afterwards it ends at its wake time (its real length);
 * - `durable.recv:<topic>` with a timeout is recorded WAITING with its deadline; without one nothing
 *   is recorded until a message arrives: a WAITING run shows it from the `suspended` history row
 *   that lists its waits; the same for a child's result (`durable.result:<id>`);
 * - a recv or a child's result is recorded when it ends, so it starts at the first suspension that
 *   listed it (when the run went to sleep for it) rather than at its end; the same for a group's wait
 *   (`durable.group.wait:<seq>`, Durable.startChildren).
 * Each wait step carries `wait`: what it waits for (kind, topic or child run, until when).
 */

export type StepWait =
  | { kind: 'sleep'; until: string | null }
  | { kind: 'recv'; topic: string; until: string | null }
  | { kind: 'child'; runId: string; until: null }
  | { kind: 'group'; group: number; until: null };

type Row = Record<string, unknown>;

const SLEEP = 'durable.sleep';
const RECV = 'durable.recv:';
const RESULT = 'durable.result:';
const GROUP_WAIT = 'durable.group.wait:';
const UNFINISHED = ['PENDING', 'RUNNING', 'WAITING'];

interface Suspension {
  at: string;
  waits: Array<{ seq: number; kind: string; key: string | null }>;
}

/** A recorded Date ({ $durable: 'Date', v }) as ISO text, or null. */
function dateOf(v: unknown): string | null {
  const d = v as { $durable?: unknown; v?: unknown } | null;
  if (d && typeof d === 'object' && d.$durable === 'Date' && typeof d.v === 'string' && !Number.isNaN(Date.parse(d.v))) return d.v;
  return null;
}

const ms = (iso: unknown) => (typeof iso === 'string' ? Date.parse(iso) : NaN);

/** What a step named `name` waits for (null: not a wait). */
function waitOf(name: string, status: unknown, output: unknown): StepWait | null {
  if (name === SLEEP) return { kind: 'sleep', until: dateOf(output) };
  if (name.startsWith(RECV)) {
    const deadline = status === 'WAITING' ? dateOf((output as { deadline?: unknown } | null)?.deadline) : null;
    return { kind: 'recv', topic: name.slice(RECV.length), until: deadline };
  }
  if (name.startsWith(RESULT)) return { kind: 'child', runId: name.slice(RESULT.length), until: null };
  if (name.startsWith(GROUP_WAIT)) return { kind: 'group', group: Number(name.slice(GROUP_WAIT.length)), until: null };
  return null;
}

const KIND_OF = { sleep: 'sleep', recv: 'recv', child: 'child', group: 'group' } as const;
const keyOf = (w: StepWait) => (w.kind === 'recv' ? w.topic : w.kind === 'child' ? w.runId : w.kind === 'group' ? String(w.group) : null);

/** The `suspended` rows of the history, oldest first, and whether the latest one is still current. */
function suspensions(history: Row[]): { all: Suspension[]; current: Suspension | null } {
  const all: Suspension[] = [];
  let current: Suspension | null = null;
  for (const h of history) {
    const detail = h.detail as { waits?: unknown } | null;
    if (h.kind === 'suspended' && detail && Array.isArray(detail.waits)) {
      current = { at: String(h.at), waits: detail.waits as Suspension['waits'] };
      all.push(current);
    } else if (h.kind === 'claimed' || h.kind === 'resumed' || h.kind === 'cancelled' || h.kind === 'failed') current = null;
  }
  return { all, current };
}

/**
 * The steps of a run with its waits made visible (see the file comment). `now` is the database
 * clock of the read; `run` its status and finish; `history` its rows oldest first.
 */
export function withWaits(run: { status: string; finishedAt: string | null }, steps: Row[], history: Row[], now: string): Row[] {
  const { all, current } = suspensions(history);
  const firstListed = (seq: number, w: StepWait): string | null =>
    all.find((s) => s.waits.some((x) => x.seq === seq && x.kind === KIND_OF[w.kind] && (x.key ?? null) === keyOf(w)))?.at ?? null;
  const open = UNFINISHED.includes(run.status);
  const out = steps.map((s) => {
    const w = waitOf(String(s.name), s.status, s.output);
    if (!w) return s;
    const seq = Number(s.seq);
    const listed = firstListed(seq, w);
    const startedAt = listed && (s.startedAt == null || ms(listed) < ms(s.startedAt)) ? listed : (s.startedAt as string | null);
    let { status, finishedAt } = s as { status: string; finishedAt: string | null };
    const ends = w.kind === 'sleep' ? w.until : null;
    // A wait its run's cancel ended (the row is CANCELLED with the run) ended when the run did.
    const pending = status === 'WAITING' || status === 'CANCELLED' || (ends !== null && ms(ends) > ms(now));
    if (pending && open) {
      status = 'WAITING';
      finishedAt = null;
    } else if (pending) {
      // The run ended before the wait did (cancelled, timed out, or it stopped waiting for it).
      status = 'CANCELLED';
      finishedAt = run.finishedAt;
    } else if (ends !== null) finishedAt = ends;
    const durationMs = startedAt && finishedAt ? Math.max(0, ms(finishedAt) - ms(startedAt)) : null;
    return { ...s, status, startedAt, finishedAt, durationMs, wait: w };
  });
  if (run.status !== 'WAITING' || !current) return out;
  // Waits that record nothing until they end (a recv without timeout, a child's result).
  const recorded = new Set(out.map((s) => Number(s.seq)));
  for (const x of current.waits) {
    if (recorded.has(x.seq) || (x.kind !== 'recv' && x.kind !== 'child' && x.kind !== 'group') || typeof x.key !== 'string') continue;
    const w: StepWait =
      x.kind === 'recv'
        ? { kind: 'recv', topic: x.key, until: null }
        : x.kind === 'group'
          ? { kind: 'group', group: Number(x.key), until: null }
          : { kind: 'child', runId: x.key, until: null };
    out.push({
      seq: x.seq,
      name: (x.kind === 'recv' ? RECV : x.kind === 'group' ? GROUP_WAIT : RESULT) + x.key,
      status: 'WAITING',
      attempts: 0,
      startedAt: firstListed(x.seq, w),
      finishedAt: null,
      durationMs: null,
      output: null,
      error: null,
      compensation: null,
      compensates: null,
      wait: w,
      derived: true,
    });
  }
  return out.sort((a, b) => Number(a.seq) - Number(b.seq));
}
