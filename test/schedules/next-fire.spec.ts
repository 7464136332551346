import { CronExpression } from '@nestjs/schedule';
import { CronClock, resolveScheduleSpec, scheduleRunId } from '../../libs/durable/src/definitions/schedule.js';
import { planSlots } from '../../libs/durable/src/worker/schedule-plan.js';

/**
 * Next-fire computation (the cron package, as @nestjs/schedule uses it) in time zones and across
 * DST, and the slot plan of a due schedule (missed-slot policies, bounds). Pure: no database.
 */
const utc = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();
/** The n slots after `from`. */
const slots = (cron: string, tz: string, from: string, n: number) => {
  const c = CronClock.of(cron, tz);
  const out: string[] = [];
  for (let t = utc(from), i = 0; i < n; i++) out.push(iso((t = c.next(t))));
  return out;
};
/** "2026-03-29 03:00:00 CEST": wall-clock time and zone abbreviation at an instant. */
const local = (at: string, tz: string) => {
  const f = new Intl.DateTimeFormat('en-GB', {
    timeZone: tz,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
    timeZoneName: 'short',
  });
  const p = Object.fromEntries(f.formatToParts(new Date(at)).map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${p.timeZoneName}`;
};

describe('next fire: expressions and time zones', () => {
  it('accepts every CronExpression constant of @nestjs/schedule', () => {
    const values = Object.values(CronExpression);
    expect(values.length).toBeGreaterThan(80);
    for (const cron of values) {
      const spec = resolveScheduleSpec(`constant ${cron}`, { cron });
      const c = CronClock.of(spec.cron, spec.timeZone);
      expect(c.next(Date.now())).toBeGreaterThan(Date.now());
    }
  });

  it('reads 6 fields as seconds first, 5 fields as minutes first, presets and names', () => {
    expect(slots('*/15 * * * * *', 'UTC', '2026-01-01T00:00:00Z', 3)).toEqual([
      '2026-01-01T00:00:15.000Z',
      '2026-01-01T00:00:30.000Z',
      '2026-01-01T00:00:45.000Z',
    ]);
    expect(slots('*/15 * * * *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2026-01-01T00:15:00.000Z', '2026-01-01T00:30:00.000Z']);
    expect(slots('@daily', 'UTC', '2026-01-01T12:00:00Z', 1)).toEqual(['2026-01-02T00:00:00.000Z']);
    expect(slots('0 9 * * MON-FRI', 'UTC', '2026-01-02T10:00:00Z', 2)).toEqual(['2026-01-05T09:00:00.000Z', '2026-01-06T09:00:00.000Z']); // Fri → Mon
  });

  it('next is strictly after the given time, slots are whole seconds', () => {
    const c = CronClock.of('* * * * * *', 'UTC');
    expect(iso(c.next(utc('2026-01-01T00:00:00.000Z')))).toBe('2026-01-01T00:00:01.000Z');
    expect(iso(c.next(utc('2026-01-01T00:00:00.400Z')))).toBe('2026-01-01T00:00:01.000Z');
    expect(iso(c.atOrAfter(utc('2026-01-01T00:00:00.000Z')))).toBe('2026-01-01T00:00:00.000Z');
    expect(iso(c.atOrAfter(utc('2026-01-01T00:00:00.400Z')))).toBe('2026-01-01T00:00:01.000Z');
  });

  it('reads the expression in the time zone (whole and half-hour offsets)', () => {
    expect(slots('0 9 * * *', 'America/New_York', '2026-01-15T00:00:00Z', 1)).toEqual(['2026-01-15T14:00:00.000Z']);
    expect(slots('0 9 * * *', 'America/New_York', '2026-07-15T00:00:00Z', 1)).toEqual(['2026-07-15T13:00:00.000Z']);
    expect(slots('0 9 * * *', 'Asia/Kolkata', '2026-01-15T00:00:00Z', 1)).toEqual(['2026-01-15T03:30:00.000Z']);
    expect(slots('0 0 * * *', 'Pacific/Chatham', '2026-01-15T00:00:00Z', 1)).toEqual(['2026-01-15T10:15:00.000Z']); // +13:45
  });
});

describe('next fire across DST', () => {
  // Europe/Berlin 2026: spring forward 29 March 02:00 → 03:00 (01:00Z); fall back 25 October 03:00 → 02:00 (01:00Z).
  it('spring gap: a time that does not exist fires once, when the clocks jump', () => {
    const s = slots('30 2 * * *', 'Europe/Berlin', '2026-03-27T12:00:00Z', 3);
    expect(s).toEqual(['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']);
    expect(local(s[1], 'Europe/Berlin')).toBe('2026-03-29 03:00:00 CEST');
  });

  it('spring gap: hourly and every-20-minutes skip the missing hour, no double fire at 03:00', () => {
    expect(slots('0 * * * *', 'Europe/Berlin', '2026-03-28T23:30:00Z', 3)).toEqual([
      '2026-03-29T00:00:00.000Z', // 01:00 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST
      '2026-03-29T02:00:00.000Z', // 04:00 CEST
    ]);
    const s = slots('*/20 * * * *', 'Europe/Berlin', '2026-03-29T00:30:00Z', 3);
    expect(s).toEqual(['2026-03-29T00:40:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-29T01:20:00.000Z']);
  });

  it('autumn repeat: a fixed time fires once (the first 02:30), not twice', () => {
    const s = slots('30 2 * * *', 'Europe/Berlin', '2026-10-24T12:00:00Z', 2);
    expect(s).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
    expect(local(s[0], 'Europe/Berlin')).toBe('2026-10-25 02:30:00 CEST');
  });

  it('autumn repeat: hourly and every-30-minutes fire on each real hour (both 02:00s)', () => {
    expect(slots('0 * * * *', 'Europe/Berlin', '2026-10-24T23:30:00Z', 3)).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET
      '2026-10-25T02:00:00.000Z', // 03:00 CET
    ]);
    expect(slots('*/30 * * * *', 'Europe/Berlin', '2026-10-24T23:50:00Z', 5)).toEqual([
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T00:30:00.000Z',
      '2026-10-25T01:00:00.000Z',
      '2026-10-25T01:30:00.000Z',
      '2026-10-25T02:00:00.000Z',
    ]);
  });

  it('America/New_York: 02:30 on the spring-forward day fires at 03:00 EDT; the autumn 01:30 fires once', () => {
    expect(slots('30 2 * * *', 'America/New_York', '2026-03-07T12:00:00Z', 2)).toEqual([
      '2026-03-08T07:00:00.000Z',
      '2026-03-09T06:30:00.000Z',
    ]);
    expect(slots('30 1 * * *', 'America/New_York', '2026-10-31T12:00:00Z', 2)).toEqual([
      '2026-11-01T05:30:00.000Z',
      '2026-11-02T06:30:00.000Z',
    ]);
  });

  it('a half-hour DST shift (Australia/Lord_Howe) keeps midnight at midnight', () => {
    const s = slots('0 0 * * *', 'Australia/Lord_Howe', '2026-04-04T00:00:00Z', 2);
    expect(s.map((x) => local(x, 'Australia/Lord_Howe').slice(11, 19))).toEqual(['00:00:00', '00:00:00']);
    expect(Date.parse(s[1]) - Date.parse(s[0])).toBe(24.5 * 3600_000);
  });
});

describe('slot plan of a due schedule', () => {
  const every = CronClock.of('* * * * * *', 'UTC');
  const T = utc('2026-06-01T12:00:00Z');
  const plan = (catchUp: string, next: number, now: number, misfire = 1_000, max = 100, windowMs = 5_000) =>
    planSlots(every, next, now, { catchUp, windowMs }, misfire, max);

  it('on time (within the misfire tolerance): every due slot starts, under any policy', () => {
    for (const p of ['skip', 'latest', 'all']) {
      const r = plan(p, T, T + 500);
      expect(r.slots).toEqual([T]);
      expect(r.nextFireAt).toBe(T + 1_000);
      expect(r.leftOut).toBeNull();
    }
  });

  it('after 10 s down: skip runs none of the missed slots, latest the last one, all those within the window', () => {
    const now = T + 10_400; // slots T … T+10 s are due; those before now − 1 s were missed
    expect(plan('skip', T, now).slots).toEqual([T + 10_000]);
    expect(plan('latest', T, now).slots).toEqual([T + 9_000, T + 10_000]);
    expect(plan('all', T, now).slots).toEqual([6_000, 7_000, 8_000, 9_000, 10_000].map((d) => T + d)); // window 5 s: from T + 5.4 s
    for (const p of ['skip', 'latest', 'all']) expect(plan(p, T, now).nextFireAt).toBe(T + 11_000);
    // what each leaves out (the scheduler logs it once the plan applies): the slots from T up to the first it runs
    expect(plan('skip', T, now).leftOut).toEqual({ from: T, before: T + 10_000 });
    expect(plan('latest', T, now).leftOut).toEqual({ from: T, before: T + 9_000 });
    expect(plan('all', T, now).leftOut).toEqual({ from: T, before: T + 6_000 });
  });

  it('a round that comes late by less than a slot leaves out the one slot it missed under skip, and none under latest', () => {
    const now = T + 1_600; // T was missed (1.6 s late), T + 1 s is on time
    expect(plan('skip', T, now)).toEqual({ slots: [T + 1_000], nextFireAt: T + 2_000, leftOut: { from: T, before: T + 1_000 } });
    expect(plan('latest', T, now)).toEqual({ slots: [T, T + 1_000], nextFireAt: T + 2_000, leftOut: null });
    expect(plan('all', T, now)).toEqual({ slots: [T, T + 1_000], nextFireAt: T + 2_000, leftOut: null });
  });

  it('all with a window shorter than the misfire tolerance still runs the slots that are on time', () => {
    const r = plan('all', T, T + 5_000, 3_000, 100, 500); // T+2 s … T+5 s are within the 3 s tolerance
    expect(r.slots).toEqual([2_000, 3_000, 4_000, 5_000].map((d) => T + d));
    expect(r.leftOut).toEqual({ from: T, before: T + 2_000 });
  });

  it('is bounded per round: the next fire stored is the first slot left', () => {
    const r = plan('all', T, T + 10_400, 1_000, 3, 60_000);
    expect(r.slots).toEqual([T, T + 1_000, T + 2_000]);
    expect(r.nextFireAt).toBe(T + 3_000);
  });

  it('finds the latest missed slot of a long outage in few computations (a week of every-second slots)', () => {
    const clock = CronClock.of('* * * 1-5 * *', 'UTC'); // fresh memo
    const week = 7 * 86400_000;
    const start = utc('2026-06-01T00:00:00Z');
    const now = start + week + 400;
    const t0 = performance.now();
    const r = planSlots(clock, start, now, { catchUp: 'latest', windowMs: 1 }, 1_000, 100);
    expect(performance.now() - t0).toBeLessThan(500);
    // slots only on days 1-5 of the month: the latest missed one is 2026-06-05T23:59:59
    expect(iso(r.slots[0])).toBe('2026-06-05T23:59:59.000Z');
    expect(iso(r.nextFireAt)).toBe('2026-07-01T00:00:00.000Z');
  });

  it('derives the run id from the schedule and the slot', () => {
    expect(scheduleRunId('tenant-1', T)).toBe('sched:tenant-1:2026-06-01T12:00:00.000Z');
    expect(scheduleRunId('tenant-1', T, true)).toBe('sched:tenant-1:2026-06-01T12:00:00.000Z:manual');
  });
});
