import { describe, expect, it } from 'vitest';
import { checkPayloadFilter, PAYLOAD_FILTER_LIMITS } from '../../src/definitions/payload-filter-grammar.ts';

describe('checkPayloadFilter', () => {
  it('accepts scalars, lists, operator mappings and nesting', () => {
    expect(
      checkPayloadFilter({
        action: 'opened',
        count: 1,
        draft: false,
        closed_at: null,
        labels: ['bug', 'p1'],
        data: { object: { status: { in: ['paid'], not_in: ['refunded'] }, note: { exists: false } } },
      }),
    ).toEqual([]);
  });

  it('refuses a non-mapping filter', () => {
    expect(checkPayloadFilter(['a'])).toEqual([{ path: '', message: expect.stringContaining('mapping') }]);
    expect(checkPayloadFilter('a')).toHaveLength(1);
  });

  it('names the path when operator keys are mixed with field keys', () => {
    const problems = checkPayloadFilter({ data: { status: { in: ['a'], state: 'b' } } });
    expect(problems).toEqual([{ path: '/data/status', message: expect.stringContaining('`payload.data.status`') }]);
    expect(problems[0]!.message).toContain('`state`');
  });

  it('checks operator value types', () => {
    const problems = checkPayloadFilter({ a: { in: 'x' }, b: { exists: 'yes' }, c: { not_in: [{}] } });
    expect(problems.map((p) => p.path)).toEqual(['/a/in', '/b/exists', '/c/not_in/0']);
  });

  it('enforces the depth limit', () => {
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < PAYLOAD_FILTER_LIMITS.maxDepth - 1; i++) deep = { n: deep };
    expect(checkPayloadFilter(deep)).toEqual([]);
    expect(checkPayloadFilter({ n: deep })).toHaveLength(1);
  });

  it('enforces the key, list and size limits', () => {
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i]));
    expect(checkPayloadFilter(many)).toEqual([{ path: '/k64', message: expect.stringContaining('64 keys') }]);
    const longList = { a: Array.from({ length: 101 }, (_, i) => i) };
    expect(checkPayloadFilter(longList)[0]!.message).toContain('at most 100');
    const big = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, 'x'.repeat(900)]));
    expect(checkPayloadFilter(big)).toEqual([{ path: '', message: expect.stringContaining('8192') }]);
  });

  it("warns on a field key that looks like another language's operator, and accepts the escaped form", () => {
    expect(checkPayloadFilter({ count: { gt: 5 }, tags: { contains: 'x' } })).toEqual([
      { path: '/count/gt', message: expect.stringContaining('write the key as `"/gt"`'), severity: 'warning' },
      {
        path: '/tags/contains',
        message: expect.stringContaining('did you mean a bare value (it matches any element of an array)?'),
        severity: 'warning',
      },
    ]);
    expect(checkPayloadFilter({ count: { '/gt': 5 }, '/in': [1], 'a~b': { '/x~1y~0z': true } })).toEqual([]);
    expect(checkPayloadFilter({ '/': 1, '/a/b': 2, '/a~2': 3 }).map((p) => [p.path, p.severity])).toEqual([
      ['/~1', undefined],
      ['/~1a~1b', undefined],
      ['/~1a~02', undefined],
    ]);
  });

  it('escapes odd keys in pointers and readable paths', () => {
    const problems = checkPayloadFilter({ 'a/b': { 'c d': [] } });
    expect(problems[0]).toEqual({ path: '/a~1b/c d', message: expect.stringContaining('payload["a/b"]["c d"]') });
  });
});
