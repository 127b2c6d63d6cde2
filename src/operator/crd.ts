import { readFileSync } from 'node:fs';
import { DiagnosticSchema } from '../factories/schemas.ts';

export type JsonSchema = { [key: string]: unknown };

export const GROUP = 'agentyard.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const FACTORY_KIND = 'Factory';
export const FACTORY_PLURAL = 'factories';
export const FACTORY_CRD_NAME = `${FACTORY_PLURAL}.${GROUP}`;

/**
 * The Factory JSON Schema, with `$defs.Diagnostic` taken from the API's DiagnosticSchema so that status
 * errors, the API's `errors` and the CLI's JSON output are one definition. Used by the spec validator and
 * by the CRD generator.
 */
export function factoryJsonSchema(): JsonSchema {
  const schema = JSON.parse(
    readFileSync(new URL('./schemas/factory-crd.schema.json', import.meta.url), 'utf8'),
  ) as JsonSchema;
  const defs = schema.$defs as Record<string, JsonSchema>;
  defs.Diagnostic = JSON.parse(JSON.stringify(DiagnosticSchema)) as JsonSchema;
  return schema;
}

/** Keywords a structural CRD schema may carry (apiextensions.k8s.io/v1 JSONSchemaProps, minus $ref and friends). */
const STRUCTURAL_KEYWORDS = new Set([
  'type',
  'format',
  'title',
  'description',
  'default',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'enum',
  'maxProperties',
  'minProperties',
  'required',
  'items',
  'properties',
  'additionalProperties',
  'nullable',
  'example',
  'x-kubernetes-list-type',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-int-or-string',
  'x-kubernetes-validations',
]);

/** Annotations of the JSON Schema that a CRD cannot hold and does not need. */
const DROPPED_KEYWORDS = new Set(['$schema', '$id', '$defs', '$comment', 'errorMessage']);

function resolveRef(root: JsonSchema, ref: string): JsonSchema {
  if (!ref.startsWith('#/')) throw new Error(`CRD schema: only local $ref are supported, got "${ref}"`);
  let node: unknown = root;
  for (const part of ref.slice(2).split('/')) {
    node = (node as Record<string, unknown> | undefined)?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  }
  if (!node || typeof node !== 'object') throw new Error(`CRD schema: $ref "${ref}" does not resolve`);
  return node as JsonSchema;
}

/**
 * Turns a JSON Schema (draft 2020-12) into the structural OpenAPI v3 schema a CRD needs: `$ref`s inlined
 * (sibling keywords override the target's), `anyOf` of constants as `enum`, `[type, "null"]` as `nullable`,
 * `additionalProperties: false` dropped (structural schemas prune unknown fields anyway). An unsupported
 * keyword is an error, so the schema cannot drift into something the API server would reject.
 */
export function toStructural(node: JsonSchema, root: JsonSchema = node, at = '#'): JsonSchema {
  let source = node;
  while (typeof source.$ref === 'string') {
    const { $ref, ...siblings } = source;
    source = { ...resolveRef(root, $ref as string), ...siblings };
  }
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(source)) {
    if (DROPPED_KEYWORDS.has(key) || key.startsWith('x-agentyard')) continue;
    if (key === 'anyOf' && Array.isArray(value) && value.every((v) => v && typeof v === 'object' && 'const' in v)) {
      const consts = value as { const: unknown; type?: string }[];
      out.enum = consts.map((v) => v.const);
      const types = new Set(consts.map((v) => v.type ?? typeof v.const));
      if (types.size === 1) out.type = [...types][0];
      continue;
    }
    if (key === 'type' && Array.isArray(value)) {
      const types = value.filter((t) => t !== 'null');
      if (types.length !== 1)
        throw new Error(`CRD schema ${at}: a union of types (${value.join(', ')}) is not structural`);
      out.type = types[0];
      if (value.includes('null')) out.nullable = true;
      continue;
    }
    if (key === 'additionalProperties') {
      if (value === false) continue;
      out.additionalProperties =
        typeof value === 'object' && value
          ? toStructural(value as JsonSchema, root, `${at}/additionalProperties`)
          : value;
      continue;
    }
    if (!STRUCTURAL_KEYWORDS.has(key)) throw new Error(`CRD schema ${at}: keyword "${key}" is not supported in a CRD`);
    if (key === 'properties') {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, JsonSchema>).map(([name, sub]) => [
          name,
          toStructural(sub, root, `${at}/properties/${name}`),
        ]),
      );
    } else if (key === 'items') {
      out.items = toStructural(value as JsonSchema, root, `${at}/items`);
    } else {
      out[key] = value;
    }
  }
  if (out.type === undefined && !out['x-kubernetes-int-or-string'] && !out['x-kubernetes-preserve-unknown-fields']) {
    throw new Error(`CRD schema ${at}: every node needs a type`);
  }
  return out;
}

/** The Factory CustomResourceDefinition, as an object ready to serialize. */
export function factoryCrd(): JsonSchema {
  const schema = factoryJsonSchema();
  const { spec, status } = schema.properties as { spec: JsonSchema; status: JsonSchema };
  const openAPIV3Schema = {
    type: 'object',
    description: schema.description,
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string', description: 'agentyard.dev/v1alpha1' },
      kind: { type: 'string', description: 'Factory' },
      metadata: { type: 'object' },
      spec: toStructural(spec, schema, '#/properties/spec'),
      status: toStructural(status, schema, '#/properties/status'),
    },
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: FACTORY_CRD_NAME,
      labels: { 'app.kubernetes.io/part-of': 'agentyard' },
    },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        kind: FACTORY_KIND,
        listKind: `${FACTORY_KIND}List`,
        plural: FACTORY_PLURAL,
        singular: 'factory',
        shortNames: ['fac'],
        categories: ['agentyard'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
            { name: 'Revision', type: 'string', jsonPath: '.status.appliedRevision' },
            { name: 'Webhooks', type: 'integer', jsonPath: '.status.webhookCount' },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
            { name: 'Status', type: 'string', priority: 1, jsonPath: '.status.conditions[?(@.type=="Ready")].message' },
          ],
          schema: { openAPIV3Schema },
        },
      ],
    },
  };
}
