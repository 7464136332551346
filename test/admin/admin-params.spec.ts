import { AdminParamError, parseForkBody, parseListQuery, parseStatsQuery } from '../../libs/durable/src/admin/params.js';
import { decodeCursor, encodeCursor } from '../../libs/durable/src/admin/cursor.js';
import { likePrefix } from '../../libs/durable/src/store/admin-list.js';

/** Parameter parsing without HTTP: also the shapes an app's "extended" (qs) query parser produces. */
describe('admin parameter parsing', () => {
  const param = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      expect(e).toBeInstanceOf(AdminParamError);
      return (e as AdminParamError).parameter;
    }
    throw new Error('expected an AdminParamError');
  };

  it('has defaults for an empty query', () => {
    expect(parseListQuery({})).toEqual({
      filter: {
        statuses: null,
        workflows: null,
        queues: null,
        createdFrom: null,
        createdTo: null,
        finishedFrom: null,
        finishedTo: null,
        idPrefix: null,
        parentId: null,
        tags: null,
        input: null,
        ids: null,
      },
      sort: 'created',
      order: 'desc',
      limit: 50,
      cursor: null,
    });
    expect(parseListQuery(undefined).limit).toBe(50);
    expect(parseStatsQuery({})).toEqual({ windowMinutes: 60 });
  });

  it('rejects nested objects, arrays where one value is expected, and prototype keys', () => {
    expect(param(() => parseListQuery({ status: { a: 'b' } }))).toBe('status');
    expect(param(() => parseListQuery({ workflow: [['x']] }))).toBe('workflow');
    expect(param(() => parseListQuery({ limit: ['1', '2'] }))).toBe('limit');
    expect(param(() => parseListQuery({ cursor: { s: 'created' } }))).toBe('cursor');
    expect(param(() => parseListQuery(JSON.parse('{"__proto__": {"limit": "1"}}')))).toBe('__proto__');
    expect(param(() => parseListQuery({ status: Array.from({ length: 51 }, () => 'FAILED') }))).toBe('status');
    expect(param(() => parseListQuery('status=FAILED'))).toBe('query');
  });

  it('parses instants strictly', () => {
    expect(parseListQuery({ createdFrom: '2026-01-31' }).filter.createdFrom?.toISOString()).toBe('2026-01-31T00:00:00.000Z');
    expect(parseListQuery({ createdFrom: '2026-01-31T12:00:00+02:00' }).filter.createdFrom?.toISOString()).toBe('2026-01-31T10:00:00.000Z');
    expect(parseListQuery({ createdFrom: '1769860800000' }).filter.createdFrom?.toISOString()).toBe('2026-01-31T12:00:00.000Z');
    for (const bad of ['today', '2026-1-1', '1e12', '-5', '+275760-09-13T00:00:00Z', '10000-01-01', '2026-01-31T12:00:00+2']) {
      expect(param(() => parseListQuery({ createdFrom: bad }))).toBe('createdFrom');
    }
  });

  it('round-trips cursors and binds them to their ordering', () => {
    const c = encodeCursor('updated', 'asc', '2026-01-31T12:00:00.000Z', "o'brien/42");
    expect(decodeCursor(c, 'updated', 'asc')).toEqual({ at: new Date('2026-01-31T12:00:00.000Z'), id: "o'brien/42" });
    expect(() => decodeCursor(c, 'created', 'asc')).toThrow(AdminParamError);
  });

  it('reads fork bodies', () => {
    expect(parseForkBody({ fromStep: 3 })).toEqual({ fromStep: 3 });
    expect(parseForkBody({ fromStep: '0' })).toEqual({ fromStep: 0 });
    for (const bad of [
      undefined,
      null,
      'x',
      [],
      {},
      { fromStep: -1 },
      { fromStep: 2.5 },
      { fromStep: '1e3' },
      { fromStep: 1_000_001 },
      { fromStep: true },
    ]) {
      expect(param(() => parseForkBody(bad))).toBe('fromStep');
    }
  });

  it('escapes LIKE wildcards in id prefixes', () => {
    expect(likePrefix('a%b_c\\d')).toBe('a\\%b\\_c\\\\d%');
  });
});
