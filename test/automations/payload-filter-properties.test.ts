/** Properties of the payload filter matcher, checked with fast-check over generated payloads and filters. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchPayloadFilter, payloadFilterLimits } from '../../src/automations/payload-filter.ts';
import type {
  PayloadFilter,
  PayloadFilterCondition,
  PayloadFilterScalar,
} from '../../src/automations/payload-filter.ts';
import { checkPayloadFilter } from '../../src/definitions/payload-filter-grammar.ts';

const matches = (filter: unknown, payload: unknown): boolean =>
  matchPayloadFilter(filter as PayloadFilter, payload).matched;

// Small domains so that generated filters and payloads often talk about the same keys and values.
const key = fc.constantFrom('a', 'b', 'c', 'state', 'id');
const scalar: fc.Arbitrary<PayloadFilterScalar> = fc.oneof(
  fc.constantFrom('x', 'y', '1', 'true', ''),
  fc.integer({ min: -2, max: 2 }),
  fc.boolean(),
  fc.constant(null),
);
const list = fc.array(scalar, { maxLength: 4 });

const { payload } = fc.letrec<{ payload: unknown; object: Record<string, unknown> }>((tie) => ({
  payload: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('payload'), { maxLength: 3 }),
    tie('object'),
  ),
  object: fc.dictionary(key, tie('payload'), { maxKeys: 4 }),
}));
const payloadObject = fc.dictionary(key, payload, { maxKeys: 4 });

const operators = fc
  .record({ in: list, not_in: list, exists: fc.boolean() }, { requiredKeys: [] })
  .filter((ops) => Object.keys(ops).length > 0);

const { filter } = fc.letrec<{ filter: PayloadFilter; condition: PayloadFilterCondition }>((tie) => ({
  condition: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, list, operators, tie('filter')),
  filter: fc.dictionary(key, tie('condition'), { maxKeys: 3 }),
}));

const OPERATOR_NAMES = new Set(['in', 'not_in', 'exists']);

/**
 * A filter every one of whose leaves is copied from the payload itself. Below the top level, fields named
 * like operators are left out: a nested object holding one is an operator object by the grammar.
 */
function filterFromLeaves(value: Record<string, unknown>, depth = 1): PayloadFilter {
  const entries: Array<[string, PayloadFilterCondition]> = [];
  for (const [field, v] of Object.entries(value)) {
    // A field named like an operator below the top, or starting with "/", is written in the escaped "/name" form.
    const k =
      field.startsWith('/') || (depth > 1 && OPERATOR_NAMES.has(field))
        ? `/${field.replace(/~/g, '~0').replace(/\//g, '~1')}`
        : field;
    if (v === null || typeof v !== 'object') entries.push([k, v as PayloadFilterScalar]);
    else if (Array.isArray(v)) {
      const element = v.find((e) => e === null || typeof e !== 'object');
      entries.push([k, element === undefined ? { exists: true } : (element as PayloadFilterScalar)]);
    } else if (depth < payloadFilterLimits.maxDepth)
      entries.push([k, filterFromLeaves(v as Record<string, unknown>, depth + 1)]);
    else entries.push([k, { exists: true }]);
  }
  // fromEntries defines own properties, so a "__proto__" field stays a field (as from JSON.parse)
  return Object.fromEntries(entries);
}

const isScalar = (v: unknown): v is PayloadFilterScalar => v === null || typeof v !== 'object';

describe('payload filter properties', () => {
  it('{} matches every payload', () => {
    fc.assert(fc.property(fc.jsonValue(), (p) => matches({}, p)));
  });

  it('a payload always matches a filter built from its own leaves', () => {
    fc.assert(fc.property(payloadObject, (p) => matches(filterFromLeaves(p), p)));
    const anyKey = fc.oneof(
      fc.string(),
      fc.constantFrom('in', 'not_in', 'exists', '__proto__', 'a/b', '~', '/x', '/a~1b'),
    );
    const jsonObject = fc.dictionary(anyKey, fc.jsonValue(), { maxKeys: 5 });
    fc.assert(fc.property(jsonObject, (p) => matches(filterFromLeaves(p), p)));
  });

  it("in with the field's own value always matches", () => {
    fc.assert(
      fc.property(key, scalar, list, payloadObject, (k, v, others, rest) => {
        const p = { ...rest, [k]: v };
        return (
          matches({ [k]: { in: [...others, v] } }, p) && matches({ [k]: [v, ...others] }, p) && matches({ [k]: v }, p)
        );
      }),
    );
  });

  it('in and not_in of the same list are complementary for present scalar fields', () => {
    fc.assert(
      fc.property(key, scalar, list, payloadObject, (k, v, l, rest) => {
        const p = { ...rest, [k]: v };
        return matches({ [k]: { in: l } }, p) !== matches({ [k]: { not_in: l } }, p);
      }),
    );
  });

  it('for a payload array, in means some element is listed and not_in means none is', () => {
    fc.assert(
      fc.property(key, fc.array(scalar, { maxLength: 5 }), list, (k, values, l) => {
        const p = { [k]: values };
        const some = values.some((v) => l.includes(v));
        return matches({ [k]: { in: l } }, p) === some && matches({ [k]: { not_in: l } }, p) === !some;
      }),
    );
  });

  it('equality is strict: a value never matches its string form unless it is that string', () => {
    fc.assert(
      fc.property(key, scalar, (k, v) => {
        fc.pre(typeof v !== 'string');
        return !matches({ [k]: String(v) }, { [k]: v }) && !matches({ [k]: v }, { [k]: String(v) });
      }),
    );
  });

  it('a missing field matches exactly exists: false, not_in, and operator objects made only of those', () => {
    fc.assert(
      fc.property(payloadObject, filter, (p, f) => {
        const absent = 'missing_field';
        for (const condition of Object.values(f)) {
          const result = matches({ [absent]: condition }, p);
          if (isScalar(condition) || Array.isArray(condition)) {
            if (result) return false;
          } else if ('in' in condition || 'not_in' in condition || 'exists' in condition) {
            const ops = condition as { in?: unknown; exists?: boolean };
            const expected = ops.in === undefined && ops.exists !== true;
            if (result !== expected) return false;
          }
        }
        return true;
      }),
    );
  });

  it('adding a key never turns a miss into a hit (and a hit with more keys is a hit with fewer)', () => {
    fc.assert(
      fc.property(
        filter,
        key,
        filter.chain((f) => fc.constantFrom(...(Object.values(f).length ? Object.values(f) : [1]))),
        payload,
        (f, k, c, p) => {
          fc.pre(!Object.hasOwn(f, k));
          const bigger = { ...f, [k]: c };
          if (!matches(f, p)) return !matches(bigger, p);
          return !matches(bigger, p) || matches(f, p);
        },
      ),
    );
  });

  it('a filter is an AND of its keys', () => {
    fc.assert(
      fc.property(filter, payloadObject, (f, p) => {
        const each = Object.entries(f).every(([k, c]) => matches({ [k]: c }, p));
        return matches(f, p) === each;
      }),
    );
  });

  it('a nested filter over an array matches when some element matches it alone', () => {
    fc.assert(
      fc.property(key, filter, fc.array(payloadObject, { maxLength: 4 }), (k, sub, elements) => {
        fc.pre(Object.keys(sub).length > 0);
        const expected = elements.some((e) => matches(sub, e));
        return matches({ [k]: sub }, { [k]: elements }) === expected;
      }),
    );
  });

  it('never throws and always answers a well-formed result, whatever it is given', () => {
    fc.assert(
      fc.property(
        fc.anything({ withNullPrototype: true, withBigInt: true, withDate: true, withMap: true }),
        fc.anything(),
        (f, p) => {
          const result = matchPayloadFilter(f as PayloadFilter, p);
          if (result.matched) return Object.keys(result).length === 1;
          return typeof result.reason === 'string' && result.reason.length > 0 && /^(\/[^/]*)*$/.test(result.path);
        },
      ),
    );
  });

  it('every filter the apply-time grammar accepts is structurally valid for the matcher', () => {
    fc.assert(
      fc.property(fc.oneof(filter, fc.jsonValue()), payload, (f, p) => {
        fc.pre(checkPayloadFilter(f).length === 0);
        const result = matchPayloadFilter(f as PayloadFilter, p);
        return result.matched || !result.reason.startsWith('invalid filter');
      }),
    );
  });
});

describe('sanity of the generators', () => {
  it('produce both hits and misses', () => {
    const outcomes = fc.sample(fc.tuple(filter, payloadObject), 300).map(([f, p]) => matches(f, p));
    expect(outcomes).toContain(true);
    expect(outcomes).toContain(false);
  });
});
