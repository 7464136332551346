import { rng } from '../../support/rng.js';

/**
 * The admin fuzz's probes (test/admin/admin-fuzz.e2e-spec.ts): generated bad (and some good)
 * requests for every admin endpoint, the same list for the same seed.
 */

/** Raw query/path fragments: already URL-encoded (or deliberately broken). */
const NASTY = [
  '',
  '%20',
  '%00',
  'a%00b',
  '%',
  '%zz',
  '%E0%A4%A',
  '%FF%FE',
  '%C0%AF',
  '%ED%A0%80',
  '%F0%9F%92%A9',
  '%EF%BF%BF',
  encodeURIComponent("' OR '1'='1"),
  encodeURIComponent("'; DROP TABLE durable_runs; --"),
  encodeURIComponent('1; SELECT pg_sleep(10)'),
  encodeURIComponent('$1'),
  encodeURIComponent('\\'),
  encodeURIComponent('%_'),
  encodeURIComponent('*'),
  encodeURIComponent('../../etc/passwd'),
  encodeURIComponent('<script>alert(1)</script>'),
  encodeURIComponent('{"a":1}'),
  encodeURIComponent('[1,2]'),
  encodeURIComponent('null'),
  'NaN',
  'Infinity',
  '-Infinity',
  '-0',
  '0',
  '-1',
  '1e309',
  '1e-7',
  '0x10',
  '9007199254740993',
  '99999999999999999999999',
  '1.5',
  '%2B5',
  '5%20',
  '%205',
  'true',
  'false',
  'undefined',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'PENDING',
  'failed',
  'SUCCEEDED,DONE',
  ',,,',
  'FAILED%2CCANCELLED',
  'created',
  'updated',
  'asc',
  'DESC',
  '2026-01-01',
  '2026-02-30',
  '2026-13-01',
  '0000-01-01',
  '1969-12-31T23:59:59Z',
  '9999-12-31T23:59:59.999Z',
  '275760-09-13T00:00:00Z',
  '2026-01-01T25:61:61Z',
  '2026-01-01T00:00:00%2B99:99',
  '2026-01-01T00:00:00.123456789Z',
  '1700000000000',
  '17000000000000000',
  'x'.repeat(257),
  'y'.repeat(5000),
  encodeURIComponent('é'.repeat(300)),
  encodeURIComponent('🙂'.repeat(200)),
  encodeURIComponent('\u2028\u2029'),
  'L-00001',
  'L-',
  'L-0000',
  'no-such-run',
];

const LIST_PARAMS = [
  'status',
  'workflow',
  'queue',
  'createdFrom',
  'createdTo',
  'finishedFrom',
  'finishedTo',
  'idPrefix',
  'parentId',
  'tag',
  'input',
  'id',
  'sort',
  'order',
  'limit',
  'cursor',
];
const EXTRA_KEYS = [
  'status[]',
  'status[0]',
  'status[a]',
  'limit[]',
  '__proto__',
  'constructor[prototype][x]',
  'x',
  'LIMIT',
  '',
  '%00',
  'a%zz',
];

function cursors(r: () => number): string[] {
  const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
  const t = ['2026-01-01T00:00:00.000Z', '9999-12-31T23:59:59.999Z', 'yesterday', 12, null, '2026-01-01'];
  const out = ['', 'x', '====', 'a+b/c', b64('not json'), b64(null), b64([]), b64({}), b64({ s: 'created', o: 'desc' }), b64('"str"')];
  for (let i = 0; i < 12; i++) {
    out.push(
      b64({
        s: pick(r, ['created', 'updated', 'x', 1]),
        o: pick(r, ['asc', 'desc', null]),
        t: pick(r, t),
        i: pick(r, ['L-00001', '', 'x'.repeat(300), "'--", 5, 'a\u0000b']),
      }),
    );
  }
  out.push('A'.repeat(2000));
  return out;
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

export interface Probe {
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  headers?: Record<string, string>;
  /** An event stream (GET live): its status is read, then the connection is closed. */
  stream?: boolean;
}

export function probes(seed: number): Probe[] {
  const r = rng(seed);
  const out: Probe[] = [];
  const ids = NASTY.concat(['L-00001', 'L-00004', `${'z'.repeat(256)}`, '%2F', 'a%2Fb', '..', '%2e%2e', 'runs', 'stats']);
  // 1. One list parameter at a time, with every nasty value.
  for (const p of LIST_PARAMS) for (const v of NASTY) out.push({ method: 'GET', path: `runs?${p}=${v}` });
  // 2. Random combinations of list parameters (including repeats and unknown keys).
  for (let i = 0; i < 300; i++) {
    const n = 1 + Math.floor(r() * 5);
    const parts: string[] = [];
    for (let k = 0; k < n; k++) parts.push(`${r() < 0.15 ? pick(r, EXTRA_KEYS) : pick(r, LIST_PARAMS)}=${pick(r, NASTY)}`);
    out.push({ method: 'GET', path: `runs?${parts.join('&')}` });
  }
  for (const c of cursors(r))
    for (const sort of ['', '&sort=updated', '&order=asc']) out.push({ method: 'GET', path: `runs?cursor=${c}${sort}` });
  // 3. Run ids in the path, for the detail and every action.
  for (const id of ids) {
    out.push({ method: 'GET', path: `runs/${id}` });
    out.push({ method: 'GET', path: `runs/${id}?${pick(r, LIST_PARAMS)}=${pick(r, NASTY)}` });
    out.push({ method: 'POST', path: `runs/${id}/cancel` });
    out.push({ method: 'POST', path: `runs/${id}/resume`, body: '{}', headers: { 'content-type': 'application/json' } });
    out.push({
      method: 'POST',
      path: `runs/${id}/fork`,
      body: JSON.stringify({ fromStep: Math.floor(r() * 4) }),
      headers: { 'content-type': 'application/json' },
    });
  }
  // 4. Fork bodies: wrong types, ranges, shapes, broken JSON, other content types, huge bodies.
  const bodies = [
    'null',
    '[]',
    '"str"',
    '1',
    'true',
    '{}',
    '{"fromStep":null}',
    '{"fromStep":-1}',
    '{"fromStep":1e309}',
    '{"fromStep":1e6}',
    '{"fromStep":1000001}',
    '{"fromStep":"1e3"}',
    '{"fromStep":"0x1"}',
    '{"fromStep":" 1 "}',
    '{"fromStep":[1]}',
    '{"fromStep":{"$gt":0}}',
    '{"fromStep":true}',
    '{"fromStep":1.0000001}',
    '{"fromStep":9007199254740993}',
    '{"fromStep":0,"__proto__":{"x":1}}',
    '{"constructor":{"prototype":{}}}',
    '{"fromStep":"\' OR 1=1 --"}',
    '{"fromStep":0',
    '{fromStep:0}',
    '\u0000',
    `{"fromStep":0,"pad":"${'p'.repeat(200_000)}"}`,
    `${'['.repeat(5000)}${']'.repeat(5000)}`,
    '{"fromStep":0}',
  ];
  const types = [
    'application/json',
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/json; charset=latin1',
    'multipart/form-data; boundary=x',
    'application/xml',
  ];
  for (const b of bodies) {
    for (const id of ['L-00001', 'L-00004', 'no-such-run']) {
      out.push({ method: 'POST', path: `runs/${id}/fork`, body: b, headers: { 'content-type': pick(r, types) } });
      out.push({ method: 'POST', path: `runs/${id}/fork`, body: b, headers: { 'content-type': 'application/json' } });
    }
  }
  out.push({
    method: 'POST',
    path: 'runs/L-00001/fork',
    body: 'fromStep=1',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  // Cancel bodies ({ compensate?: boolean }): wrong types and shapes, broken JSON.
  const cancelBodies = [
    '{}',
    '{"compensate":false}',
    '{"compensate":"true"}',
    '{"compensate":1}',
    '{"compensate":null}',
    '[]',
    '{"x":1}',
    '{"compensate":true',
    'null',
    '"x"',
  ];
  for (const b of cancelBodies) {
    for (const id of ['L-00002', 'no-such-run'])
      out.push({ method: 'POST', path: `runs/${id}/cancel`, body: b, headers: { 'content-type': pick(r, types) } });
  }
  // 5. stats and workflows.
  for (const v of NASTY) {
    out.push({ method: 'GET', path: `stats?windowMinutes=${v}` });
    out.push({ method: 'GET', path: `workflows?${pick(r, EXTRA_KEYS)}=${v}` });
  }
  // 6. Schedules: list parameters, ids in the path for the detail and every action.
  const SCHEDULE_PARAMS = ['workflow', 'paused', 'after', 'limit'];
  for (const p of SCHEDULE_PARAMS) for (const v of NASTY) out.push({ method: 'GET', path: `schedules?${p}=${v}` });
  for (let i = 0; i < 100; i++) {
    out.push({
      method: 'GET',
      path: `schedules?${pick(r, SCHEDULE_PARAMS.concat(EXTRA_KEYS))}=${pick(r, NASTY)}&${pick(r, SCHEDULE_PARAMS)}=${pick(r, NASTY)}`,
    });
  }
  for (const id of ids.concat(['S-1', 'S-bad', 'S-1%2Fpause'])) {
    out.push({ method: 'GET', path: `schedules/${id}` });
    out.push({ method: 'GET', path: `schedules/${id}?runs=${pick(r, NASTY)}` });
    for (const action of ['pause', 'resume', 'trigger']) {
      out.push({
        method: 'POST',
        path: `schedules/${id}/${action}`,
        ...(r() < 0.5 ? { body: pick(r, bodies), headers: { 'content-type': pick(r, types) } } : {}),
      });
    }
  }
  // 7. Bulk actions: preview bodies (actions, filters, shapes) and execute bodies (forged tokens, sizes).
  //    Previews change nothing; the only real tokens executed select no run (idPrefix no-such-…).
  const json = { 'content-type': 'application/json' };
  const FILTER_KEYS = [...LIST_PARAMS.filter((k) => !['sort', 'order', 'limit', 'cursor'].includes(k)), 'x', '__proto__'];
  const decoded = (v: string) => {
    try {
      return decodeURIComponent(v);
    } catch {
      return v;
    }
  };
  for (let i = 0; i < 150; i++) {
    const filter: Record<string, unknown> = {};
    for (let k = 0, n = Math.floor(r() * 3); k < n; k++)
      filter[pick(r, FILTER_KEYS)] =
        r() < 0.2 ? [decoded(pick(r, NASTY)), decoded(pick(r, NASTY))] : r() < 0.1 ? 5 : decoded(pick(r, NASTY));
    const body: Record<string, unknown> = { action: pick(r, ['cancel', 'resume', 'retry', 'delete', 'DELETE', '', 5, null]), filter };
    if (r() < 0.2) body.compensate = pick(r, [true, false, 'yes', 1]);
    out.push({ method: 'POST', path: 'runs/bulk/preview', body: JSON.stringify(body), headers: json });
  }
  for (const b of bodies) out.push({ method: 'POST', path: 'runs/bulk/preview', body: b, headers: { 'content-type': pick(r, types) } });
  const token = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  // A well-formed token's fields; each forged one changes some of them (a changed key keeps its place).
  const wellFormed = { v: 1, a: 'delete', q: { idPrefix: 'no-such-' }, c: false, t: '2026-01-01T00:00:00.000Z', k: null, n: 0, d: 0, s: 0 };
  const forge = (changes: Record<string, unknown>) => token({ ...wellFormed, ...changes });
  const forged = [
    '',
    'x',
    '====',
    token(null),
    token({ v: 1 }),
    forge({ q: {}, t: '2026-02-30T00:00:00.000Z' }),
    forge({ k: { t: 'x', i: 'a' } }),
    forge({ k: { t: '2026-01-01T00:00:00.000Z', i: 'a\u0000' } }),
    forge({ n: -1, d: 1.5, s: 'x' }),
    forge({ a: 'explode' }),
    forge({ a: 'cancel', q: { status: 'NOPE' } }),
    forge({ a: 'cancel', c: 'yes' }),
    forge({ q: { idPrefix: 'no-such-', input: '{"a":1}' }, t: '9999-12-31T23:59:59.999Z' }),
    'A'.repeat(9000),
  ];
  for (const t of forged) {
    for (const size of [undefined, 0, 1, 1000, 1001, '5', -1, null]) {
      out.push({ method: 'POST', path: 'runs/bulk/execute', body: JSON.stringify({ token: t, batchSize: size }), headers: json });
    }
  }
  for (const b of bodies) out.push({ method: 'POST', path: 'runs/bulk/execute', body: b, headers: { 'content-type': pick(r, types) } });
  // 8. Live updates: bad parameters answer 400; a good request opens a stream (its status is checked, then it is closed).
  for (const v of NASTY) {
    out.push({ method: 'GET', path: `live?stats=${v}`, stream: true });
    out.push({ method: 'GET', path: `live?run=${v}`, stream: true });
    out.push({ method: 'GET', path: `live?${pick(r, EXTRA_KEYS)}=${v}`, stream: true });
  }
  // 8b. Backfills: the list's limit, and pause/resume of ids that are no backfill's run (nothing may change).
  for (const v of NASTY) {
    out.push({ method: 'GET', path: `backfills?limit=${v}` });
    out.push({ method: 'GET', path: `backfills?${pick(r, EXTRA_KEYS)}=${v}` });
  }
  for (const id of ['no-such-run', 'S-1%2Fpause', '%00', 'x'.repeat(300)]) {
    for (const action of ['pause', 'resume']) {
      out.push({
        method: 'POST',
        path: `backfills/${id}/${action}`,
        ...(r() < 0.5 ? { body: '{}', headers: { 'content-type': 'application/json' } } : {}),
      });
    }
  }
  // 9. Charts.
  for (const v of NASTY) {
    out.push({ method: 'GET', path: `charts?range=${v}` });
    out.push({ method: 'GET', path: `charts?${pick(r, EXTRA_KEYS)}=${v}` });
  }
  for (const range of ['1h', '24h', '7d']) out.push({ method: 'GET', path: `charts?range=${range}` });
  // 10. Wrong methods and unknown routes under the admin path.
  for (const p of [
    'runs',
    'stats',
    'workflows',
    'schedules',
    'schedules/S-1/delete',
    'runs/L-00001',
    'runs/L-00001/delete',
    'runs/L-00001/cancel/now',
    'sql',
    'query?q=SELECT%201',
  ]) {
    out.push({ method: 'POST', path: p, body: '{}', headers: { 'content-type': 'application/json' } });
    out.push({ method: 'GET', path: `${p}/x` });
  }
  return out;
}
