import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import ajvErrors from 'ajv-errors';
import type { DiagnosticCode } from './codes.ts';
import { didYouMean } from './levenshtein.ts';
import { KNOWN_SIGNATURE_SCHEMES } from './signature-schemes.ts';

export const SCHEMA_VERSION = 'v1alpha1';

/** The file kinds that have a schema. */
export type SchemaKind =
  | 'factory'
  | 'agent'
  | 'automation'
  | 'runner'
  | 'scorer'
  | 'webhook'
  | 'benchmark-suite'
  | 'benchmark-task';

export const SCHEMA_KINDS: readonly SchemaKind[] = [
  'factory',
  'agent',
  'automation',
  'runner',
  'scorer',
  'webhook',
  'benchmark-suite',
  'benchmark-task',
];

export type JsonSchema = { [key: string]: unknown };

const DOCUMENT_NAMES = ['common', ...SCHEMA_KINDS].map((k) => `${k}.schema.json`);

function loadDocument(name: string): JsonSchema {
  const schema = JSON.parse(readFileSync(new URL(`./schemas/${name}`, import.meta.url), 'utf8')) as JsonSchema;
  if (name === 'webhook.schema.json') {
    // The list of schemes lives in one TypeScript constant shared with the ingress; the published schema carries it.
    const properties = schema.properties as Record<string, JsonSchema>;
    properties.signatureScheme = { ...properties.signatureScheme, enum: [...KNOWN_SIGNATURE_SCHEMES] };
  }
  return schema;
}

let bundle: Record<string, JsonSchema> | undefined;

/** The schema documents keyed by file name (`factory.schema.json`, `common.schema.json`, …). */
export function getSchemaBundle(): Record<string, JsonSchema> {
  bundle ??= Object.fromEntries(DOCUMENT_NAMES.map((name) => [name, loadDocument(name)]));
  return structuredClone(bundle);
}

function schemaDocuments(): Record<string, JsonSchema> {
  bundle ??= Object.fromEntries(DOCUMENT_NAMES.map((name) => [name, loadDocument(name)]));
  return bundle;
}

/** A schema error translated to our vocabulary; the caller turns `pointer` into a file position. */
export interface SchemaIssue {
  code: DiagnosticCode;
  severity: 'error' | 'warning';
  /** JSON pointer the diagnostic names (a missing key is named by its would-be path). */
  pointer: string;
  /** JSON pointer of the node the position should come from, and whether to point at its key. */
  at: string;
  target: 'key' | 'value';
  /** A path a person reads: `agentDefaults.harness.type`. */
  field: string;
  message: string;
  /** For unknown keys: the keys allowed at that place (for suggestions). */
  allowed?: string[];
  unknownKey?: string;
}

let ajv: Ajv2020 | undefined;
const validators = new Map<SchemaKind, ValidateFunction>();

function instance(): Ajv2020 {
  if (ajv) return ajv;
  const created = new Ajv2020({
    allErrors: true,
    verbose: true,
    strict: true,
    allowUnionTypes: true,
    allowMatchingProperties: true,
  });
  addFormats.default(created);
  ajvErrors.default(created);
  created.addKeyword({ keyword: 'x-agentyard-code', schemaType: 'string' });
  // Marks a key Agentyard adds to the product's format (docs/factory-files.md says so beside it).
  created.addKeyword({ keyword: 'x-agentyard-extension', schemaType: 'boolean' });
  created.addKeyword({
    keyword: 'x-agentyard-not-run-here',
    schemaType: 'string',
    errors: true,
    // Present and meaningful (not false, null or an empty list) → a warning, never an error.
    validate: function notRunHere(reason: string, data: unknown): boolean {
      if (data === false || data === null || data === undefined || (Array.isArray(data) && data.length === 0))
        return true;
      (notRunHere as unknown as { errors: Partial<ErrorObject>[] }).errors = [
        { keyword: 'x-agentyard-not-run-here', message: reason, params: {} },
      ];
      return false;
    },
  });
  for (const [name, schema] of Object.entries(schemaDocuments())) created.addSchema(schema, name);
  ajv = created;
  return created;
}

function validatorFor(kind: SchemaKind): ValidateFunction {
  let validate = validators.get(kind);
  if (!validate) {
    validate = instance().getSchema(`${kind}.schema.json`);
    if (!validate) throw new Error(`no schema for ${kind}`);
    validators.set(kind, validate);
  }
  return validate;
}

function segmentsOf(pointer: string): string[] {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function escapeSegment(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** `triggers[0].filter.repos` from `/triggers/0/filter/repos`. */
export function fieldName(pointer: string): string {
  let out = '';
  for (const seg of segmentsOf(pointer)) {
    if (/^\d+$/.test(seg)) out += `[${seg}]`;
    else out += out ? `.${seg}` : seg;
  }
  return out || '(root)';
}

function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a number';
  return `a ${typeof value}`;
}

const TYPE_NAMES: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  integer: 'an integer',
  boolean: 'a boolean (true or false)',
  object: 'a mapping',
  array: 'a list',
  null: 'null',
};

function schemaCode(error: ErrorObject): DiagnosticCode | undefined {
  const parent = error.parentSchema as JsonSchema | undefined;
  const code = parent?.['x-agentyard-code'];
  return typeof code === 'string' ? (code as DiagnosticCode) : undefined;
}

function allowedKeys(error: ErrorObject): string[] {
  const parent = error.parentSchema as JsonSchema | undefined;
  const props = parent?.properties;
  return props && typeof props === 'object' ? Object.keys(props) : [];
}

function translate(error: ErrorObject, custom?: string): SchemaIssue | undefined {
  const base = error.instancePath;
  const field = fieldName(base);
  const issue = (code: DiagnosticCode, message: string, extra: Partial<SchemaIssue> = {}): SchemaIssue => ({
    code: schemaCode(error) ?? code,
    severity: 'error',
    pointer: base,
    at: base,
    target: 'value',
    field,
    message,
    ...extra,
  });
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
    case 'unevaluatedProperties': {
      const key = String(params.additionalProperty ?? params.unevaluatedProperty);
      const pointer = `${base}/${escapeSegment(key)}`;
      const where = base ? ` in \`${field}\`` : '';
      return {
        ...issue('FF_UNKNOWN_FIELD', `unknown key \`${key}\`${where}`),
        pointer,
        at: pointer,
        target: 'key',
        field: fieldName(pointer),
        allowed: allowedKeys(error),
        unknownKey: key,
      };
    }
    case 'required': {
      const key = String(params.missingProperty);
      const pointer = `${base}/${escapeSegment(key)}`;
      const where = base ? `\`${field}\` is missing` : 'missing';
      return {
        ...issue('FF_MISSING_REQUIRED', `${where} the required key \`${key}\``),
        pointer,
        field: fieldName(pointer),
      };
    }
    case 'type': {
      const expected = String(params.type)
        .split(',')
        .map((t) => TYPE_NAMES[t] ?? t)
        .join(' or ');
      const hint =
        params.type === 'string' && typeof error.data === 'number' ? ` (quote it: "${String(error.data)}")` : '';
      return issue('FF_TYPE_MISMATCH', `\`${field}\` must be ${expected}, not ${describeType(error.data)}${hint}`);
    }
    case 'enum': {
      const allowed = (params.allowedValues as unknown[]).filter((v) => v !== null).map(String);
      const values = allowed.map((v) => `\`${v}\``);
      const hint = typeof error.data === 'string' ? didYouMean(error.data, allowed) : '';
      return issue(
        'FF_INVALID_VALUE',
        `\`${field}\` must be one of ${values.join(', ')} (got ${JSON.stringify(error.data)})${hint}`,
      );
    }
    case 'const':
      return issue('FF_INVALID_VALUE', `\`${field}\` must be ${JSON.stringify(params.allowedValue)}`);
    case 'minItems':
      if (params.limit === 1) return issue('FF_MISSING_REQUIRED', `\`${field}\` must list at least one item`);
      return issue('FF_INVALID_VALUE', `\`${field}\` must list at least ${String(params.limit)} items`);
    case 'maxItems':
      return issue('FF_INVALID_VALUE', `\`${field}\` must list at most ${String(params.limit)} items`);
    case 'uniqueItems': {
      const pointer = `${base}/${String(params.i)}`;
      const duplicate = Array.isArray(error.data) ? error.data[Number(params.i)] : undefined;
      return {
        ...issue(
          'FF_DUPLICATE_KEY',
          `\`${field}\` lists ${JSON.stringify(duplicate)} twice (items ${String(params.j)} and ${String(params.i)})`,
        ),
        pointer,
        at: pointer,
      };
    }
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return issue('FF_INVALID_VALUE', `\`${field}\` must be ${String(params.comparison)} ${String(params.limit)}`);
    case 'x-agentyard-not-run-here':
      return {
        ...issue('FF_NOT_SUPPORTED_HERE', `${error.message ?? 'not run by this service'}`),
        severity: 'warning',
        target: 'key',
      };
    case 'pattern':
    case 'minLength':
    case 'maxLength':
    case 'format':
    case 'multipleOf':
    case 'propertyNames':
      return issue('FF_INVALID_VALUE', `\`${field}\` ${custom ?? error.message ?? 'is not valid'}`);
    default:
      return undefined;
  }
}

/** Validates one parsed value against its kind's schema; issues in document order of ajv. */
export function checkSchema(kind: SchemaKind, value: unknown): SchemaIssue[] {
  const validate = validatorFor(kind);
  if (validate(value)) return [];
  const issues: SchemaIssue[] = [];
  for (const error of validate.errors ?? []) {
    if (error.keyword === 'errorMessage') {
      // ajv-errors replaced the original error(s); keep their keyword for the code, its wording for the text.
      for (const original of (error.params as { errors: ErrorObject[] }).errors) {
        const translated = translate(
          { ...original, parentSchema: original.parentSchema ?? error.parentSchema },
          error.message,
        );
        if (translated) issues.push(translated);
      }
      continue;
    }
    const translated = translate(error);
    if (translated) issues.push(translated);
  }
  // A value of the wrong type also fails its enum; the type is the useful message.
  const mistyped = new Set(issues.filter((i) => i.code === 'FF_TYPE_MISMATCH').map((i) => i.pointer));
  return issues.filter((i) => i.code === 'FF_TYPE_MISMATCH' || !mistyped.has(i.pointer));
}

/** Ajv compiles lazily; the CLI and benchmarks may warm every validator up front. */
export function compileAllSchemas(): void {
  for (const kind of SCHEMA_KINDS) validatorFor(kind);
}
