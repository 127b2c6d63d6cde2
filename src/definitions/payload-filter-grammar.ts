/**
 * Grammar and limits of a webhook trigger's `filter.payload` (see docs/factory-files.md, "Payload filters").
 * Pure and self-contained: the matcher lives in src/automations/ and relies on a filter having passed this check.
 *
 * - The filter is a mapping; every key must match (AND); a nested mapping reaches nested fields.
 * - A bare scalar matches by strict equality; a bare list is `in`.
 * - An operator mapping holds only `in` (list), `not_in` (list) and `exists` (boolean).
 * - A key written `/name` is always the field `name` (JSON pointer escapes `~1` = `/`, `~0` = `~`): how to
 *   reach a field named like an operator, and how to say that an operator-like key is meant as a field.
 * - Limits: depth ≤ 8, ≤ 64 keys in all, ≤ 100 values per list, ≤ 8 KB serialized.
 */

export interface PayloadFilterProblem {
  /** JSON pointer relative to the filter (`""` is the filter itself). */
  path: string;
  message: string;
  /** A warning applies; an error (the default) refuses the revision. */
  severity?: 'warning';
}

export const PAYLOAD_FILTER_LIMITS = {
  maxDepth: 8,
  maxKeys: 64,
  maxListValues: 100,
  maxSerializedBytes: 8 * 1024,
} as const;

export const PAYLOAD_FILTER_OPERATORS = ['in', 'not_in', 'exists'] as const;

const OPERATORS: ReadonlySet<string> = new Set(PAYLOAD_FILTER_OPERATORS);

/**
 * Keys other filter languages use as operators, with what to write here instead. A bare key is a field name,
 * so `count: { gt: 5 }` looks for a field `count.gt` and never matches what its author meant.
 */
export const OPERATOR_LIKE_KEYS: Readonly<Record<string, string | undefined>> = {
  eq: 'a bare value',
  equals: 'a bare value',
  ne: '`not_in`',
  neq: '`not_in`',
  not: '`not_in`',
  nin: '`not_in`',
  notin: '`not_in`',
  not_exists: '`exists: false`',
  exist: '`exists`',
  has: '`exists`',
  contains: 'a bare value (it matches any element of an array)',
  includes: 'a bare value (it matches any element of an array)',
  any: '`in`',
  oneof: '`in`',
  gt: undefined,
  gte: undefined,
  lt: undefined,
  lte: undefined,
  matches: undefined,
  match: undefined,
  regex: undefined,
  like: undefined,
  startswith: undefined,
  endswith: undefined,
  and: undefined,
  or: undefined,
  all: undefined,
  size: undefined,
};

/** The field a filter key names: `/name` is the escaped form (JSON pointer escapes), any other key is itself. */
export function payloadFieldName(key: string): string {
  return key.startsWith('/') ? key.slice(1).replace(/~1/g, '/').replace(/~0/g, '~') : key;
}

function operatorLikeHint(key: string): string | undefined {
  const bare = key.replace(/^\$/, '').toLowerCase();
  if (!(bare in OPERATOR_LIKE_KEYS) && !key.startsWith('$')) return undefined;
  const instead = OPERATOR_LIKE_KEYS[bare];
  const suggestion = instead ? `; did you mean ${instead}?` : '';
  return (
    `\`${key}\` is read as a payload field named \`${key}\`, not as an operator (the operators are \`in\`, \`not_in\` and \`exists\`)${suggestion} ` +
    `To match a field of that name, write the key as \`"/${key}"\`.`
  );
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isScalar(value: unknown): boolean {
  return (
    value === null ||
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  );
}

function pointer(parent: string, key: string | number): string {
  return `${parent}/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;
}

/** `payload.data.object.status`, `payload.tags[2]`: the path a person reads. */
function dotted(path: string): string {
  let out = 'payload';
  for (const raw of path.split('/').slice(1)) {
    const seg = payloadFieldName(raw.replace(/~1/g, '/').replace(/~0/g, '~'));
    out += /^\d+$/.test(seg) ? `[${seg}]` : /^[A-Za-z_$][\w$-]*$/.test(seg) ? `.${seg}` : `[${JSON.stringify(seg)}]`;
  }
  return out;
}

export function checkPayloadFilter(filter: unknown): PayloadFilterProblem[] {
  const problems: PayloadFilterProblem[] = [];
  const report = (path: string, message: string): void => {
    problems.push({ path, message: `\`${dotted(path)}\`: ${message}` });
  };
  const warn = (path: string, message: string): void => {
    problems.push({ path, message: `\`${dotted(path)}\`: ${message}`, severity: 'warning' });
  };
  if (!isMapping(filter)) {
    problems.push({ path: '', message: '`payload` must be a mapping of payload fields to conditions' });
    return problems;
  }
  let keys = 0;
  let keyLimitReported = false;

  const checkList = (path: string, list: unknown[], what: string): void => {
    if (list.length === 0) report(path, `${what} is empty and would match nothing`);
    if (list.length > PAYLOAD_FILTER_LIMITS.maxListValues) {
      report(path, `${what} has ${list.length} values; at most ${PAYLOAD_FILTER_LIMITS.maxListValues} are allowed`);
    }
    list.forEach((item, i) => {
      if (!isScalar(item)) report(pointer(path, i), 'list values must be strings, numbers, booleans or null');
    });
  };

  const checkOperators = (path: string, node: Record<string, unknown>): void => {
    const fields = Object.keys(node).filter((k) => !OPERATORS.has(k));
    if (fields.length > 0) {
      report(
        path,
        `an operator mapping (in, not_in, exists) cannot also hold field keys (${fields.map((f) => `\`${f}\``).join(', ')}); ` +
          'move the fields to their own mapping',
      );
    }
    for (const op of ['in', 'not_in'] as const) {
      if (!(op in node)) continue;
      const value = node[op];
      if (!Array.isArray(value)) report(pointer(path, op), `\`${op}\` takes a list of values`);
      else checkList(pointer(path, op), value, `\`${op}\``);
    }
    if ('exists' in node && typeof node.exists !== 'boolean')
      report(pointer(path, 'exists'), '`exists` takes true or false');
    if (Array.isArray(node.in) && Array.isArray(node.not_in)) {
      const excluded = new Set(node.not_in.map((v) => JSON.stringify(v)));
      for (const v of node.in) {
        if (excluded.has(JSON.stringify(v))) report(path, `${JSON.stringify(v)} is in both \`in\` and \`not_in\``);
      }
    }
  };

  const walk = (path: string, node: Record<string, unknown>, depth: number): void => {
    if (depth > PAYLOAD_FILTER_LIMITS.maxDepth) {
      report(path, `nesting is deeper than ${PAYLOAD_FILTER_LIMITS.maxDepth} levels`);
      return;
    }
    const entries = Object.entries(node);
    if (entries.length === 0) {
      report(path, 'an empty mapping matches nothing useful; remove it or add conditions');
      return;
    }
    for (const [key, value] of entries) {
      keys++;
      if (keys > PAYLOAD_FILTER_LIMITS.maxKeys && !keyLimitReported) {
        keyLimitReported = true;
        report(pointer(path, key), `the filter has more than ${PAYLOAD_FILTER_LIMITS.maxKeys} keys in all`);
      }
      const at = pointer(path, key);
      if (key.startsWith('/')) {
        const rest = key.slice(1);
        if (rest === '' || rest.includes('/') || /~(?![01])/.test(rest)) {
          report(
            at,
            `\`${key}\` is an escaped field name: \`/\` then one name, with \`~1\` for \`/\` and \`~0\` for \`~\` (nest mappings for deeper fields)`,
          );
        }
      } else {
        const hint = operatorLikeHint(key);
        if (hint) warn(at, hint);
      }
      if (Array.isArray(value)) {
        checkList(at, value, 'the list');
      } else if (isMapping(value)) {
        const keysHere = Object.keys(value);
        if (keysHere.some((k) => OPERATORS.has(k))) {
          keys += keysHere.length;
          checkOperators(at, value);
        } else {
          walk(at, value, depth + 1);
        }
      } else if (!isScalar(value)) {
        report(at, 'must be a value, a list of values, an operator mapping or a nested mapping');
      }
    }
  };

  walk('', filter, 1);
  const bytes = Buffer.byteLength(JSON.stringify(filter), 'utf8');
  if (bytes > PAYLOAD_FILTER_LIMITS.maxSerializedBytes) {
    problems.push({
      path: '',
      message: `\`payload\` is ${bytes} bytes as JSON; at most ${PAYLOAD_FILTER_LIMITS.maxSerializedBytes} are allowed`,
    });
  }
  return problems;
}
