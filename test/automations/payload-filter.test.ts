import { describe, expect, it } from 'vitest';
import { matchPayloadFilter, payloadFilterLimits } from '../../src/automations/payload-filter.ts';
import type { PayloadFilter, PayloadFilterResult } from '../../src/automations/payload-filter.ts';

const hit = { matched: true };
const match = (filter: unknown, payload: unknown): PayloadFilterResult =>
  matchPayloadFilter(filter as PayloadFilter, payload);
const miss = (path: string) => expect.objectContaining({ matched: false, path });

const pr = {
  action: 'opened',
  number: 7,
  draft: false,
  merged_at: null,
  labels: [
    { name: 'bug', color: 'red' },
    { name: 'ui', color: 'blue' },
  ],
  tags: ['a', 'b'],
  pull_request: { state: 'open', head: { ref: 'feature/x' }, additions: 12 },
  repository: { full_name: 'acme/app' },
};

describe('AND and nesting', () => {
  it.each([
    ['{} matches everything', {}, hit],
    ['one key', { action: 'opened' }, hit],
    ['every key must match', { action: 'opened', number: 8 }, miss('/number')],
    ['the first failing key is reported', { action: 'closed', number: 8 }, miss('/action')],
    ['nested objects reach nested fields', { pull_request: { state: 'open', head: { ref: 'feature/x' } } }, hit],
    [
      'a nested mismatch names the full path',
      { pull_request: { head: { ref: 'main' } } },
      miss('/pull_request/head/ref'),
    ],
    ['an empty nested object matches', { pull_request: {} }, hit],
    ['an empty nested object matches a missing field too', { issue: {} }, hit],
  ])('%s', (_name, filter, expected) => {
    expect(match(filter, pr)).toEqual(expected);
  });
});

describe('fields named like operators: the "/name" key', () => {
  const payload = { range: { in: 'eu', gt: 5, 'a/b': 1 }, exists: true };
  it.each([
    ['"/in" is the field `in`, not the operator', { range: { '/in': 'eu' } }, hit],
    ['a list under "/in" is `in` over that field', { range: { '/in': ['us', 'eu'] } }, hit],
    ['a mismatch names the field', { range: { '/in': 'us' } }, miss('/range/in')],
    ['"/gt" reads the same field as a bare gt', { range: { '/gt': 5, gt: 5 } }, hit],
    ['~1 stands for /', { range: { '/a~1b': 1 } }, hit],
    ['at the top level too', { '/exists': true }, hit],
  ])('%s', (_name, filter, expected) => {
    expect(match(filter, payload)).toEqual(expected);
  });
});

describe('bare scalars: strict equality', () => {
  it.each([
    ['string', { action: 'opened' }, hit],
    ['number', { number: 7 }, hit],
    ['1 is not "1"', { number: '7' }, miss('/number')],
    ['"7" is not 7', { action: 7 }, miss('/action')],
    ['false', { draft: false }, hit],
    ['false is not "false"', { draft: 'false' }, miss('/draft')],
    ['false is not 0', { draft: 0 }, miss('/draft')],
    ['null equals a present null', { merged_at: null }, hit],
    ['null does not equal a missing field', { closed_at: null }, miss('/closed_at')],
    ['a scalar never equals an object', { pull_request: 'open' }, miss('/pull_request')],
    ['case matters', { action: 'Opened' }, miss('/action')],
  ])('%s', (_name, filter, expected) => {
    expect(match(filter, pr)).toEqual(expected);
  });

  it('explains a mismatch with both values', () => {
    expect(match({ action: 'closed' }, pr)).toEqual({
      matched: false,
      path: '/action',
      reason: 'expected "closed", got "opened"',
    });
    expect(match({ number: '7' }, pr)).toMatchObject({ reason: 'expected "7", got 7' });
  });
});

describe('lists and operators', () => {
  it.each([
    ['a bare array is in', { action: ['opened', 'reopened'] }, hit],
    ['a bare array misses', { action: ['closed', 'reopened'] }, miss('/action')],
    ['in', { action: { in: ['opened', 'edited'] } }, hit],
    ['in is strict', { number: { in: ['7'] } }, miss('/number')],
    ['in with null matches a present null', { merged_at: { in: [null, 'x'] } }, hit],
    ['not_in', { action: { not_in: ['closed'] } }, hit],
    ['not_in misses', { action: { not_in: ['opened'] } }, miss('/action')],
    ['not_in is strict', { number: { not_in: ['7'] } }, hit],
    ['not_in [null] excludes a present null', { merged_at: { not_in: [null] } }, miss('/merged_at')],
    ['exists: true', { number: { exists: true } }, hit],
    ['exists: false', { closed_at: { exists: false } }, hit],
    ['exists: false on a present field', { number: { exists: false } }, miss('/number')],
    ['operators combine with AND (both hold)', { action: { exists: true, in: ['opened'], not_in: ['closed'] } }, hit],
    ['operators combine with AND (in fails)', { action: { exists: true, in: ['edited'] } }, miss('/action')],
    [
      'operators combine with AND (not_in fails)',
      { action: { in: ['opened', 'edited'], not_in: ['opened'] } },
      miss('/action'),
    ],
    ['not_in over an object value matches (an object is in no list)', { pull_request: { not_in: ['open'] } }, hit],
    ['in over an object value misses', { pull_request: { in: ['open'] } }, miss('/pull_request')],
    ['an empty in list matches nothing', { action: { in: [] } }, miss('/action')],
    ['an empty not_in list excludes nothing', { action: { not_in: [] } }, hit],
  ])('%s', (_name, filter, expected) => {
    expect(match(filter, pr)).toEqual(expected);
  });
});

describe('missing fields', () => {
  it.each([
    ['exists: false matches', { closed_at: { exists: false } }, hit],
    ['not_in matches', { closed_at: { not_in: ['x'] } }, hit],
    ['not_in + exists: false matches', { closed_at: { not_in: ['x'], exists: false } }, hit],
    ['equality does not', { closed_at: 'x' }, miss('/closed_at')],
    ['a bare array does not', { closed_at: ['x'] }, miss('/closed_at')],
    ['in does not', { closed_at: { in: ['x'] } }, miss('/closed_at')],
    ['exists: true does not', { closed_at: { exists: true } }, miss('/closed_at')],
    ['not_in + in does not', { closed_at: { in: ['x'], not_in: ['y'] } }, miss('/closed_at')],
    [
      'a missing parent makes every nested field missing (equality)',
      { issue: { state: 'open' } },
      miss('/issue/state'),
    ],
    ['a missing parent makes every nested field missing (not_in)', { issue: { state: { not_in: ['closed'] } } }, hit],
    ['a missing parent makes every nested field missing (exists: false)', { issue: { state: { exists: false } } }, hit],
    ['a scalar parent has no fields', { action: { length: { exists: false } } }, hit],
    ['a scalar parent has no fields (equality)', { action: { length: 6 } }, miss('/action/length')],
    ['a null parent has no fields', { merged_at: { by: { exists: false } } }, hit],
  ])('%s', (_name, filter, expected) => {
    expect(match(filter, pr)).toEqual(expected);
  });

  it('says the field is missing', () => {
    expect(match({ closed_at: 'x' }, pr)).toMatchObject({ reason: 'the field is missing (expected "x")' });
    expect(match({ closed_at: { exists: true } }, pr)).toMatchObject({ reason: 'the field is missing (exists: true)' });
  });

  it('treats only own properties as fields, never the prototype chain', () => {
    expect(match({ constructor: { exists: true } }, {})).toEqual(miss('/constructor'));
    expect(match({ toString: { exists: false } }, { a: 1 })).toEqual(hit);
    const payload: unknown = JSON.parse('{"__proto__": {"polluted": true}}');
    // (an object literal's __proto__ sets the prototype, so the filter is parsed JSON as it would be from YAML)
    expect(match(JSON.parse('{"__proto__": {"polluted": true}}'), payload)).toEqual(hit);
    expect(match(JSON.parse('{"__proto__": {"polluted": true}}'), {})).toEqual(miss('/__proto__/polluted'));
  });
});

describe('arrays in the payload', () => {
  it.each([
    ['equality matches any element', { tags: 'b' }, hit],
    ['equality misses when no element equals', { tags: 'c' }, miss('/tags')],
    ['a bare array matches when any element is listed', { tags: ['c', 'a'] }, hit],
    ['in matches when any element is listed', { tags: { in: ['z', 'b'] } }, hit],
    ['in misses when no element is listed', { tags: { in: ['z'] } }, miss('/tags')],
    ['not_in matches when no element is listed', { tags: { not_in: ['z', 'y'] } }, hit],
    ['not_in misses when any element is listed', { tags: { not_in: ['z', 'a'] } }, miss('/tags')],
    ['exists: true holds for an array', { tags: { exists: true } }, hit],
    ['a nested filter matches when one element matches all of it', { labels: { name: 'ui', color: 'blue' } }, hit],
    [
      'a nested filter does not mix fields of different elements',
      { labels: { name: 'ui', color: 'red' } },
      miss('/labels'),
    ],
    ['a nested filter with in', { labels: { name: ['docs', 'bug'] } }, hit],
    [
      'a nested filter with not_in: any element outside the list is enough',
      { labels: { name: { not_in: ['bug'] } } },
      hit,
    ],
    [
      'a nested filter with not_in: misses when every element is listed',
      { labels: { name: { not_in: ['bug', 'ui'] } } },
      miss('/labels'),
    ],
  ])('%s', (_name, filter, expected) => {
    expect(match(filter, pr)).toEqual(expected);
  });

  it.each([
    ['equality', { tags: 'a' }, false],
    ['in', { tags: ['a'] }, false],
    ['not_in', { tags: { not_in: ['a'] } }, true],
    ['exists: true', { tags: { exists: true } }, true],
    ['exists: false', { tags: { exists: false } }, false],
    ['a nested filter (no element to match)', { tags: { name: { exists: false } } }, false],
  ])('an empty array: %s', (_name, filter, matched) => {
    expect(match(filter, { tags: [] }).matched).toBe(matched);
  });

  it('does not flatten arrays of arrays', () => {
    expect(match({ m: 1 }, { m: [[1], [2]] }).matched).toBe(false);
    expect(match({ m: { not_in: [1] } }, { m: [[1]] }).matched).toBe(true);
  });

  it('matches an array payload by any element, at the top level too', () => {
    const events = [{ type: 'push' }, { type: 'issue', id: 3 }];
    expect(match({ type: 'issue', id: 3 }, events)).toEqual(hit);
    expect(match({ type: 'push', id: 3 }, events)).toEqual(miss(''));
    expect(match({}, [])).toEqual(hit);
    expect(match({ type: { exists: false } }, [])).toEqual(miss(''));
  });

  it('explains which element failed first', () => {
    const result = match({ labels: { name: 'docs' } }, pr);
    expect(result).toMatchObject({ matched: false, path: '/labels' });
    expect(!result.matched && result.reason).toContain('/labels/0/name');
  });

  it('scalar payloads have no fields', () => {
    expect(match({}, 'text')).toEqual(hit);
    expect(match({ a: { exists: false } }, 42)).toEqual(hit);
    expect(match({ a: 1 }, null)).toEqual(miss('/a'));
  });
});

describe('paths', () => {
  it('are JSON pointers with ~ and / escaped', () => {
    expect(match({ 'a/b': { 'c~d': 1 } }, { 'a/b': { 'c~d': 2 } })).toEqual(miss('/a~1b/c~0d'));
  });

  it('cut long values short in reasons', () => {
    const result = match({ body: 'x' }, { body: 'y'.repeat(10_000) });
    expect(!result.matched && result.reason.length).toBeLessThan(200);
  });
});

describe('structurally invalid filters never throw and never match', () => {
  const cyclic: Record<string, unknown> = {};
  cyclic.a = cyclic;
  let deep: Record<string, unknown> = { leaf: 1 };
  for (let i = 0; i < payloadFilterLimits.maxDepth; i++) deep = { n: deep };

  it.each([
    ['null', null, ''],
    ['an array', ['a'], ''],
    ['a string', 'action', ''],
    ['a Date', new Date(), ''],
    ['an operator object mixed with fields', { action: { in: ['opened'], state: 'x' } }, '/action'],
    ['in that is not a list', { action: { in: 'opened' } }, '/action'],
    ['not_in that is not a list', { action: { not_in: 1 } }, '/action'],
    ['exists that is not a boolean', { action: { exists: 'yes' } }, '/action'],
    ['a list holding an object', { action: [{ a: 1 }] }, '/action'],
    ['a list holding a list', { action: { in: [['a']] } }, '/action'],
    ['undefined', { action: undefined }, '/action'],
    ['a function', { action: () => true }, '/action'],
    ['NaN', { number: Number.NaN }, '/number'],
    ['Infinity', { number: { in: [Infinity] } }, '/number'],
    ['a bigint', { number: 7n }, '/number'],
    ['a cyclic object', cyclic, '/a/a/a/a/a/a/a/a'],
    [`deeper than ${payloadFilterLimits.maxDepth}`, deep, '/n/n/n/n/n/n/n/n'],
  ])('%s', (_name, filter, path) => {
    const result = match(filter, pr);
    expect(result).toMatchObject({ matched: false, path });
    expect(!result.matched && result.reason).toMatch(/^invalid filter: /);
  });

  it('reports a structural problem even when an earlier key would already miss', () => {
    expect(match({ action: 'closed', number: { exists: 'no' } }, pr)).toMatchObject({
      path: '/number',
      reason: expect.stringMatching(/^invalid filter/),
    });
  });

  it(`accepts nesting of exactly ${payloadFilterLimits.maxDepth} levels`, () => {
    let filter: Record<string, unknown> = { leaf: 1 };
    let payload: Record<string, unknown> = { leaf: 1 };
    for (let i = 1; i < payloadFilterLimits.maxDepth; i++) {
      filter = { n: filter };
      payload = { n: payload };
    }
    expect(match(filter, payload)).toEqual(hit);
  });
});

describe('payloadFilterLimits', () => {
  it('are the documented numbers', () => {
    expect(payloadFilterLimits).toEqual({ maxDepth: 8, maxKeys: 64, maxListValues: 100, maxSerializedBytes: 8192 });
  });
});
