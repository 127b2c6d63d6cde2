/**
 * The payload filter of a webhook trigger: does a delivery's JSON body match? Pure, no I/O, never throws.
 * Semantics (docs/payload-filters.md, "Semantics"):
 *
 * - every key must match (AND); a nested object reaches nested fields;
 * - a bare scalar is strict equality (1 is not "1"); a bare array is `in`;
 * - an operator object holds only `in`, `not_in`, `exists`; several operators combine with AND;
 * - a missing field: `exists: false` and `not_in` match, everything else does not;
 * - a present `null` is present: `exists: true` matches it, `exists: false` does not;
 * - a payload array: equality and `in` match when any element matches, `not_in` when no element is in the
 *   list, and a nested object when any element matches the whole nested object;
 * - a nested object over a field that is missing or not an object sees all of its fields as missing;
 * - an empty filter object (`{}`, at any level) has no condition to fail and matches anything;
 * - a key written `/name` is the field `name` (JSON pointer escapes), never an operator.
 *
 * Paths in results are JSON pointers into the payload ("/pull_request/state"; "" is the payload itself).
 */
import { PAYLOAD_FILTER_LIMITS, payloadFieldName } from '../definitions/payload-filter-grammar.ts';

export type PayloadFilterScalar = string | number | boolean | null;

export interface PayloadFilterOperators {
  in?: readonly PayloadFilterScalar[];
  not_in?: readonly PayloadFilterScalar[];
  exists?: boolean;
}

export type PayloadFilterCondition =
  | PayloadFilterScalar
  | readonly PayloadFilterScalar[]
  | PayloadFilterOperators
  | PayloadFilter;

export interface PayloadFilter {
  readonly [field: string]: PayloadFilterCondition;
}

export type PayloadFilterResult = { matched: true } | { matched: false; path: string; reason: string };

/**
 * Checked at apply time by src/definitions/payload-filter-grammar.ts (the one source of these numbers).
 * Depth counts nested filter objects, the filter itself being 1; keys count every key in all, operator
 * keys included; lists are `in`/`not_in`/bare arrays; size is the filter as UTF-8 JSON.
 */
export const payloadFilterLimits = PAYLOAD_FILTER_LIMITS;

const OPERATORS: ReadonlySet<string> = new Set(['in', 'not_in', 'exists']);

interface Miss {
  path: string;
  reason: string;
}

export function matchPayloadFilter(filter: PayloadFilter, payload: unknown): PayloadFilterResult {
  const invalid = structureProblem(filter as unknown);
  if (invalid !== undefined) return { matched: false, path: invalid.path, reason: `invalid filter: ${invalid.reason}` };
  const miss = matchNested(filter, true, payload, '');
  return miss === undefined ? { matched: true } : { matched: false, path: miss.path, reason: miss.reason };
}

// ---------------------------------------------------------------------------------------------------------
// Matching (the filter's structure has been checked)

function matchNested(filter: PayloadFilter, present: boolean, value: unknown, path: string): Miss | undefined {
  // No conditions, nothing to fail: `{}` matches everything, an empty array included.
  if (Object.keys(filter).length === 0) return undefined;
  if (present && Array.isArray(value)) {
    if (value.length === 0) return { path, reason: 'the array is empty, so no element can match the nested filter' };
    let first: Miss | undefined;
    for (let i = 0; i < value.length; i++) {
      const miss = matchFields(filter, value[i], `${path}/${i}`);
      if (miss === undefined) return undefined;
      first ??= miss;
    }
    return {
      path,
      reason: `no element of the array matches the nested filter (element 0: ${first!.path}: ${first!.reason})`,
    };
  }
  return matchFields(filter, present ? value : undefined, path);
}

function matchFields(filter: PayloadFilter, container: unknown, path: string): Miss | undefined {
  const object = isObject(container) ? container : undefined;
  for (const [key, condition] of Object.entries(filter)) {
    const field = payloadFieldName(key);
    const fieldPath = pointer(path, field);
    const present = object !== undefined && Object.hasOwn(object, field) && object[field] !== undefined;
    const miss = matchCondition(condition, present, present ? object![field] : undefined, fieldPath);
    if (miss !== undefined) return miss;
  }
  return undefined;
}

function matchCondition(
  condition: PayloadFilterCondition,
  present: boolean,
  value: unknown,
  path: string,
): Miss | undefined {
  if (Array.isArray(condition)) return matchIn(condition, present, value, path);
  if (isObject(condition)) {
    return isOperatorObject(condition)
      ? matchOperators(condition as PayloadFilterOperators, present, value, path)
      : matchNested(condition as PayloadFilter, present, value, path);
  }
  return matchEquals(condition as PayloadFilterScalar, present, value, path);
}

function matchEquals(expected: PayloadFilterScalar, present: boolean, value: unknown, path: string): Miss | undefined {
  if (!present) return { path, reason: `the field is missing (expected ${show(expected)})` };
  if (Array.isArray(value)) {
    return value.some((element) => element === expected)
      ? undefined
      : { path, reason: `no element of ${show(value)} equals ${show(expected)}` };
  }
  return value === expected ? undefined : { path, reason: `expected ${show(expected)}, got ${show(value)}` };
}

function matchIn(
  list: readonly PayloadFilterScalar[],
  present: boolean,
  value: unknown,
  path: string,
): Miss | undefined {
  if (!present) return { path, reason: `the field is missing (expected one of ${show(list)})` };
  if (Array.isArray(value)) {
    return value.some((element) => list.includes(element as PayloadFilterScalar))
      ? undefined
      : { path, reason: `no element of ${show(value)} is one of ${show(list)}` };
  }
  return list.includes(value as PayloadFilterScalar)
    ? undefined
    : { path, reason: `${show(value)} is not one of ${show(list)}` };
}

function matchNotIn(
  list: readonly PayloadFilterScalar[],
  present: boolean,
  value: unknown,
  path: string,
): Miss | undefined {
  if (!present) return undefined;
  if (Array.isArray(value)) {
    const hit = value.findIndex((element) => list.includes(element as PayloadFilterScalar));
    return hit === -1
      ? undefined
      : { path, reason: `element ${show(value[hit])} of the array is in not_in ${show(list)}` };
  }
  return list.includes(value as PayloadFilterScalar)
    ? { path, reason: `${show(value)} is in not_in ${show(list)}` }
    : undefined;
}

function matchOperators(
  operators: PayloadFilterOperators,
  present: boolean,
  value: unknown,
  path: string,
): Miss | undefined {
  if (operators.exists === true && !present) return { path, reason: 'the field is missing (exists: true)' };
  if (operators.exists === false && present)
    return { path, reason: `the field is present (exists: false), value ${show(value)}` };
  if (operators.in !== undefined) {
    const miss = matchIn(operators.in, present, value, path);
    if (miss !== undefined) return miss;
  }
  if (operators.not_in !== undefined) return matchNotIn(operators.not_in, present, value, path);
  return undefined;
}

// ---------------------------------------------------------------------------------------------------------
// Structure: what the apply-time grammar guarantees, re-checked so a bad filter can never throw here.

function structureProblem(filter: unknown): Miss | undefined {
  if (!isPlainObject(filter)) return { path: '', reason: 'the filter must be an object of field conditions' };
  return checkNested(filter, '', 1);
}

function checkNested(node: Record<string, unknown>, path: string, depth: number): Miss | undefined {
  // Also what stops a cyclic object from recursing forever.
  if (depth > payloadFilterLimits.maxDepth)
    return { path, reason: `nesting is deeper than ${payloadFilterLimits.maxDepth} levels` };
  for (const [key, value] of Object.entries(node)) {
    const at = pointer(path, payloadFieldName(key));
    if (isScalar(value)) continue;
    if (Array.isArray(value)) {
      const problem = checkList(value, at);
      if (problem !== undefined) return problem;
    } else if (isPlainObject(value)) {
      const problem = isOperatorObject(value) ? checkOperators(value, at) : checkNested(value, at, depth + 1);
      if (problem !== undefined) return problem;
    } else {
      return {
        path: at,
        reason: 'a condition must be a value, a list of values, an operator object or a nested object',
      };
    }
  }
  return undefined;
}

function checkOperators(node: Record<string, unknown>, path: string): Miss | undefined {
  const fields = Object.keys(node).filter((key) => !OPERATORS.has(key));
  if (fields.length > 0)
    return { path, reason: `an operator object cannot also hold field keys (${fields.join(', ')})` };
  for (const operator of ['in', 'not_in'] as const) {
    if (!Object.hasOwn(node, operator)) continue;
    const list = node[operator];
    if (!Array.isArray(list)) return { path, reason: `${operator} takes a list of values` };
    const problem = checkList(list, path);
    if (problem !== undefined) return problem;
  }
  if (Object.hasOwn(node, 'exists') && typeof node.exists !== 'boolean')
    return { path, reason: 'exists takes true or false' };
  return undefined;
}

function checkList(list: readonly unknown[], path: string): Miss | undefined {
  return list.every(isScalar) ? undefined : { path, reason: 'list values must be strings, numbers, booleans or null' };
}

// ---------------------------------------------------------------------------------------------------------

/** A filter object is an operator object as soon as it holds an operator key (as in the apply-time grammar). */
function isOperatorObject(node: object): boolean {
  return Object.keys(node).some((key) => OPERATORS.has(key));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (!isObject(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function isScalar(value: unknown): value is PayloadFilterScalar {
  return (
    value === null ||
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  );
}

function pointer(parent: string, key: string): string {
  return `${parent}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
}

const SHOWN_CHARACTERS = 80;

/** A value for a reason: JSON, cut short (payloads are untrusted and may be large). */
function show(value: unknown): string {
  if (value === undefined) return 'nothing';
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = String(value);
  }
  return text.length > SHOWN_CHARACTERS ? `${text.slice(0, SHOWN_CHARACTERS)}…` : text;
}
